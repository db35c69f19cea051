// Test harness (not part of the design): N nic_top instances, node i with node_id i, every
// port flattened into a vector (node i's field at i*W +: W) so that a cocotb network model
// can read and drive all N NICs with a few signal accesses per cycle. clk, rst, clear,
// start and cfg_pkt_beats are shared. The schedulers' read ports are not used. With NIS
// NIs per node, the streams are per NI: node i's NI q is stream s = i*NIS + q (field
// s*W +: W).

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_net #(
    parameter N = 16,
    parameter DEPTH = 64,
    parameter LANES = 2,
    parameter FMT = 1,
    parameter BUF_WORDS = 64,
    parameter FLOW_W = 8,
    parameter NODE_W = 8,
    parameter STEP_W = 8,
    parameter LEN_W = 16,
    parameter CNT_W = 4,
    parameter ERR_W = 16,
    parameter NIS = 1,
    parameter ADD_LAT = 0,
    parameter SCHED_PIPE = 0,
    parameter ADDR_W = (DEPTH > 1) ? $clog2(DEPTH) : 1,
    parameter BA_W = $clog2(BUF_WORDS),
    parameter DW = LANES * 32,
    parameter TU_W = BA_W + STEP_W + FLOW_W + 2
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 clear,
    input  wire                 start,
    input  wire [LEN_W-1:0]     cfg_pkt_beats,
    input  wire [N-1:0]         load_valid,
    input  wire [N*ADDR_W-1:0]  load_addr,
    input  wire [N*2-1:0]       load_op,
    input  wire [N*FLOW_W-1:0]  load_flow,
    input  wire [N*NODE_W-1:0]  load_peer,
    input  wire [N*STEP_W-1:0]  load_step,
    input  wire [N*LEN_W-1:0]   load_len,
    input  wire [N-1:0]         load_dep_op,
    input  wire [N*CNT_W-1:0]   load_dep_count,
    output wire [N-1:0]         done,
    output wire [N-1:0]         err,
    output wire [N*ERR_W-1:0]   err_count,
    output wire [N-1:0]         rx_err,
    output wire [N-1:0]         req_err,
    output wire [N*NIS-1:0]        tx_tvalid,
    input  wire [N*NIS-1:0]        tx_tready,
    output wire [N*NIS*DW-1:0]     tx_tdata,
    output wire [N*NIS-1:0]        tx_tlast,
    output wire [N*NIS*NODE_W-1:0] tx_tdest,
    output wire [N*NIS*NODE_W-1:0] tx_tid,
    output wire [N*NIS*TU_W-1:0]   tx_tuser,
    input  wire [N*NIS-1:0]        rx_tvalid,
    output wire [N*NIS-1:0]        rx_tready,
    input  wire [N*NIS*DW-1:0]     rx_tdata,
    input  wire [N*NIS-1:0]        rx_tlast,
    input  wire [N*NIS*NODE_W-1:0] rx_tid,
    input  wire [N*NIS*TU_W-1:0]   rx_tuser,
    input  wire [N-1:0]         host_we,
    input  wire [N*BA_W-1:0]    host_addr,
    input  wire [N*DW-1:0]      host_wdata,
    output wire [N*DW-1:0]      host_rdata
);

genvar i;
generate
    for (i = 0; i < N; i = i + 1) begin : g_node
        nic_top #(
            .DEPTH(DEPTH), .LANES(LANES), .FMT(FMT), .BUF_WORDS(BUF_WORDS), .FLOW_W(FLOW_W), .NODE_W(NODE_W),
            .STEP_W(STEP_W), .LEN_W(LEN_W), .CNT_W(CNT_W), .ERR_W(ERR_W), .NIS(NIS), .ADD_LAT(ADD_LAT),
            .SCHED_PIPE(SCHED_PIPE)
        ) u_nic (
            .clk(clk), .rst(rst), .clear(clear), .node_id(i[NODE_W-1:0]), .cfg_pkt_beats(cfg_pkt_beats),
            .load_valid(load_valid[i]), .load_addr(load_addr[i*ADDR_W +: ADDR_W]), .load_op(load_op[i*2 +: 2]),
            .load_flow(load_flow[i*FLOW_W +: FLOW_W]), .load_peer(load_peer[i*NODE_W +: NODE_W]),
            .load_step(load_step[i*STEP_W +: STEP_W]), .load_len(load_len[i*LEN_W +: LEN_W]),
            .load_dep_op(load_dep_op[i]), .load_dep_count(load_dep_count[i*CNT_W +: CNT_W]),
            .load_src({NODE_W{1'b0}}), .load_src_chk(1'b0),  // no source check, no timeout here
            .start(start), .timeout_cycles(16'd0), .rd_en(1'b0), .rd_addr({ADDR_W{1'b0}}),
            .step(), .running(), .done(done[i]), .err(err[i]), .err_count(err_count[i*ERR_W +: ERR_W]),
            .err_src(), .err_flow(), .ev_unexp(), .ev_wrong_src(), .ev_timeout(), .rx_err(rx_err[i]), .req_err(req_err[i]), .ni_busy(),
            .sched_send_valid(), .sched_send_entry(), .sched_send_ni(),
            .rd_valid(), .rd_entry_valid(), .rd_issued(), .rd_op(), .rd_flow(), .rd_peer(), .rd_step(), .rd_len(),
            .rd_dep_op(), .rd_dep_count(), .rd_count(), .rd_src(), .rd_src_chk(),
            .tx_tvalid(tx_tvalid[i*NIS +: NIS]), .tx_tready(tx_tready[i*NIS +: NIS]),
            .tx_tdata(tx_tdata[i*NIS*DW +: NIS*DW]), .tx_tlast(tx_tlast[i*NIS +: NIS]),
            .tx_tdest(tx_tdest[i*NIS*NODE_W +: NIS*NODE_W]), .tx_tid(tx_tid[i*NIS*NODE_W +: NIS*NODE_W]),
            .tx_tuser(tx_tuser[i*NIS*TU_W +: NIS*TU_W]),
            .rx_tvalid(rx_tvalid[i*NIS +: NIS]), .rx_tready(rx_tready[i*NIS +: NIS]),
            .rx_tdata(rx_tdata[i*NIS*DW +: NIS*DW]), .rx_tlast(rx_tlast[i*NIS +: NIS]),
            .rx_tid(rx_tid[i*NIS*NODE_W +: NIS*NODE_W]), .rx_tuser(rx_tuser[i*NIS*TU_W +: NIS*TU_W]),
            .host_we(host_we[i]), .host_addr(host_addr[i*BA_W +: BA_W]), .host_wdata(host_wdata[i*DW +: DW]),
            .host_rdata(host_rdata[i*DW +: DW])
        );
    end
endgenerate

endmodule

`resetall
