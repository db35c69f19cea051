// Test harness (not part of the design): nic_datapath with two NIs, each NI's transmit and
// receive stream split out under its own prefix (tx0_*, tx1_*, rx0_*, rx1_*) so that
// cocotbext-axi's AXI-Stream source and sink can drive and take every stream.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_dp_axis2 #(
    parameter LANES = 2,
    parameter FMT = 0,
    parameter BUF_WORDS = 32,
    parameter FLOW_W = 4,
    parameter NODE_W = 4,
    parameter STEP_W = 3,
    parameter LEN_W = 12,
    parameter ADD_LAT = 0,
    parameter BA_W = $clog2(BUF_WORDS),
    parameter DW = LANES * 32,
    parameter TU_W = BA_W + STEP_W + FLOW_W + 2
) (
    input  wire              clk,
    input  wire              rst,
    input  wire [NODE_W-1:0] node_id,
    input  wire [LEN_W-1:0]  cfg_pkt_beats,
    input  wire              send_valid,
    output wire              send_ready,
    input  wire              send_op,
    input  wire [FLOW_W-1:0] send_flow,
    input  wire [NODE_W-1:0] send_peer,
    input  wire [LEN_W-1:0]  send_len,
    input  wire [STEP_W-1:0] send_step,
    input  wire              send_ni,
    output wire [1:0]        ni_done,
    output wire              recv_valid,
    output wire [FLOW_W-1:0] recv_flow,
    output wire              recv_op,
    output wire [NODE_W-1:0] recv_src,
    output wire              rx_err,
    output wire              req_err,
    output wire              tx0_tvalid,
    input  wire              tx0_tready,
    output wire [DW-1:0]     tx0_tdata,
    output wire              tx0_tlast,
    output wire [NODE_W-1:0] tx0_tdest,
    output wire [NODE_W-1:0] tx0_tid,
    output wire [TU_W-1:0]   tx0_tuser,
    output wire              tx1_tvalid,
    input  wire              tx1_tready,
    output wire [DW-1:0]     tx1_tdata,
    output wire              tx1_tlast,
    output wire [NODE_W-1:0] tx1_tdest,
    output wire [NODE_W-1:0] tx1_tid,
    output wire [TU_W-1:0]   tx1_tuser,
    input  wire              rx0_tvalid,
    output wire              rx0_tready,
    input  wire [DW-1:0]     rx0_tdata,
    input  wire              rx0_tlast,
    input  wire [NODE_W-1:0] rx0_tid,
    input  wire [TU_W-1:0]   rx0_tuser,
    input  wire              rx1_tvalid,
    output wire              rx1_tready,
    input  wire [DW-1:0]     rx1_tdata,
    input  wire              rx1_tlast,
    input  wire [NODE_W-1:0] rx1_tid,
    input  wire [TU_W-1:0]   rx1_tuser,
    input  wire              host_we,
    input  wire [BA_W-1:0]   host_addr,
    input  wire [DW-1:0]     host_wdata,
    output wire [DW-1:0]     host_rdata
);

nic_datapath #(
    .LANES(LANES), .FMT(FMT), .BUF_WORDS(BUF_WORDS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W),
    .LEN_W(LEN_W), .ADD_LAT(ADD_LAT), .NIS(2)
) u_dp (
    .clk(clk), .rst(rst), .node_id(node_id), .cfg_pkt_beats(cfg_pkt_beats),
    .send_valid(send_valid), .send_ready(send_ready), .send_op(send_op), .send_flow(send_flow),
    .send_peer(send_peer), .send_len(send_len), .send_step(send_step), .send_ni(send_ni), .ni_done(ni_done),
    .recv_valid(recv_valid), .recv_flow(recv_flow), .recv_op(recv_op), .recv_src(recv_src), .rx_err(rx_err),
    .req_err(req_err),
    .tx_tvalid({tx1_tvalid, tx0_tvalid}), .tx_tready({tx1_tready, tx0_tready}), .tx_tdata({tx1_tdata, tx0_tdata}),
    .tx_tlast({tx1_tlast, tx0_tlast}), .tx_tdest({tx1_tdest, tx0_tdest}), .tx_tid({tx1_tid, tx0_tid}),
    .tx_tuser({tx1_tuser, tx0_tuser}),
    .rx_tvalid({rx1_tvalid, rx0_tvalid}), .rx_tready({rx1_tready, rx0_tready}), .rx_tdata({rx1_tdata, rx0_tdata}),
    .rx_tlast({rx1_tlast, rx0_tlast}), .rx_tid({rx1_tid, rx0_tid}), .rx_tuser({rx1_tuser, rx0_tuser}),
    .host_we(host_we), .host_addr(host_addr), .host_wdata(host_wdata), .host_rdata(host_rdata)
);

endmodule

`resetall
