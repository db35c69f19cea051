// The receive arbiter of nic_datapath with several NIs, for Yosys's SAT prover
// (hw_models.rtl.formal): nic_datapath's own `ifdef FORMAL assertions (only the granted
// stream is ready; a packet keeps the grant from its first beat to its last, so packets
// of different streams never interleave in the depacketiser). Reset is asserted in the
// first cycle; every input is free after it.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module props_rx_arb #(
    parameter NIS = 2,
    parameter LANES = 1,
    parameter BUF_WORDS = 2,
    parameter FLOW_W = 1,
    parameter NODE_W = 1,
    parameter STEP_W = 1,
    parameter LEN_W = 2,
    parameter ADD_LAT = 0,
    parameter BA_W = $clog2(BUF_WORDS),
    parameter NI_W = (NIS > 1) ? $clog2(NIS) : 1,
    parameter TU_W = BA_W + STEP_W + FLOW_W + 2
) (
    input wire                      clk,
    input wire                      rst,
    input wire [NODE_W-1:0]         node_id,
    input wire [LEN_W-1:0]          cfg_pkt_beats,
    input wire                      send_valid,
    input wire                      send_op,
    input wire [FLOW_W-1:0]         send_flow,
    input wire [NODE_W-1:0]         send_peer,
    input wire [LEN_W-1:0]          send_len,
    input wire [STEP_W-1:0]         send_step,
    input wire [NI_W-1:0]           send_ni,
    input wire [NIS-1:0]            tx_tready,
    input wire [NIS-1:0]            rx_tvalid,
    input wire [NIS*LANES*32-1:0]   rx_tdata,
    input wire [NIS-1:0]            rx_tlast,
    input wire [NIS*NODE_W-1:0]     rx_tid,
    input wire [NIS*TU_W-1:0]       rx_tuser,
    input wire                      host_we,
    input wire [BA_W-1:0]           host_addr,
    input wire [LANES*32-1:0]       host_wdata
);

wire                    send_ready;
wire [NIS-1:0]          ni_done;
wire                    recv_valid;
wire [FLOW_W-1:0]       recv_flow;
wire                    recv_op;
wire [NODE_W-1:0]       recv_src;
wire                    rx_err;
wire                    req_err;
wire [NIS-1:0]          tx_tvalid;
wire [NIS*LANES*32-1:0] tx_tdata;
wire [NIS-1:0]          tx_tlast;
wire [NIS*NODE_W-1:0]   tx_tdest;
wire [NIS*NODE_W-1:0]   tx_tid;
wire [NIS*TU_W-1:0]     tx_tuser;
wire [NIS-1:0]          rx_tready;
wire [LANES*32-1:0]     host_rdata;

nic_datapath #(
    .LANES(LANES), .FMT(0), .BUF_WORDS(BUF_WORDS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W),
    .LEN_W(LEN_W), .ADD_LAT(ADD_LAT), .NIS(NIS)
) dut (
    .clk(clk), .rst(rst), .node_id(node_id), .cfg_pkt_beats(cfg_pkt_beats),
    .send_valid(send_valid), .send_ready(send_ready), .send_op(send_op), .send_flow(send_flow),
    .send_peer(send_peer), .send_len(send_len), .send_step(send_step), .send_ni(send_ni), .ni_done(ni_done),
    .recv_valid(recv_valid), .recv_flow(recv_flow), .recv_op(recv_op), .recv_src(recv_src), .rx_err(rx_err),
    .req_err(req_err),
    .tx_tvalid(tx_tvalid), .tx_tready(tx_tready), .tx_tdata(tx_tdata), .tx_tlast(tx_tlast), .tx_tdest(tx_tdest),
    .tx_tid(tx_tid), .tx_tuser(tx_tuser),
    .rx_tvalid(rx_tvalid), .rx_tready(rx_tready), .rx_tdata(rx_tdata), .rx_tlast(rx_tlast), .rx_tid(rx_tid),
    .rx_tuser(rx_tuser),
    .host_we(host_we), .host_addr(host_addr), .host_wdata(host_wdata), .host_rdata(host_rdata)
);

reg past_valid = 1'b0;
always @(posedge clk) past_valid <= 1'b1;
always @* begin
    if (!past_valid) assume(rst);
end

endmodule

`resetall
