// The depacketiser's receive pipeline (ADD_LAT > 0), for Yosys's SAT prover
// (hw_models.rtl.formal): nic_depacketiser's own `ifdef FORMAL assertions (every beat taken
// is written once; a beat reads its word only when no stage holds an unwritten beat of the
// same word). Reset is asserted in the first cycle; every input (the stream and the
// buffer's read data) is free after it.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module props_depacketiser #(
    parameter LANES = 1,
    parameter BUF_WORDS = 4,
    parameter FLOW_W = 1,
    parameter NODE_W = 1,
    parameter STEP_W = 1,
    parameter ADD_LAT = 1,
    parameter BA_W = $clog2(BUF_WORDS),
    parameter TU_W = BA_W + STEP_W + FLOW_W + 2
) (
    input wire                  clk,
    input wire                  rst,
    input wire                  rx_tvalid,
    input wire [LANES*32-1:0]   rx_tdata,
    input wire                  rx_tlast,
    input wire [NODE_W-1:0]     rx_tid,
    input wire [TU_W-1:0]       rx_tuser,
    input wire [LANES*32-1:0]   buf_rdata
);

wire                rx_tready;
wire [BA_W-1:0]     buf_raddr;
wire                buf_we;
wire [BA_W-1:0]     buf_waddr;
wire [LANES*32-1:0] buf_wdata;
wire                recv_valid;
wire [FLOW_W-1:0]   recv_flow;
wire                recv_op;
wire [NODE_W-1:0]   recv_src;
wire                rx_err;

nic_depacketiser #(
    .LANES(LANES), .FMT(0), .BUF_WORDS(BUF_WORDS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W),
    .ADD_LAT(ADD_LAT)
) dut (
    .clk(clk), .rst(rst),
    .rx_tvalid(rx_tvalid), .rx_tready(rx_tready), .rx_tdata(rx_tdata), .rx_tlast(rx_tlast), .rx_tid(rx_tid),
    .rx_tuser(rx_tuser),
    .buf_raddr(buf_raddr), .buf_rdata(buf_rdata), .buf_we(buf_we), .buf_waddr(buf_waddr), .buf_wdata(buf_wdata),
    .recv_valid(recv_valid), .recv_flow(recv_flow), .recv_op(recv_op), .recv_src(recv_src), .rx_err(rx_err)
);

reg past_valid = 1'b0;
always @(posedge clk) past_valid <= 1'b1;
always @* begin
    if (!past_valid) assume(rst);
end

endmodule

`resetall
