// The scheduler's send request as an AXI-Stream source and its saturating error counter,
// as assertions for Yosys's SAT prover (hw_models.rtl.formal): once send_valid is high
// and send_ready low, the next cycle offers the same request (entry, op, flow, peer, len,
// step, NI) unless rst or clear withdraws it; err_count never wraps (at its top value it
// stays there until rst or clear). Reset in the first cycle, every input free after it.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module props_scheduler #(
    parameter DEPTH = 2,
    parameter NIS = 2,
    parameter FLOW_W = 2,
    parameter NODE_W = 2,
    parameter STEP_W = 2,
    parameter LEN_W = 2,
    parameter CNT_W = 2,
    parameter ERR_W = 2,
    parameter TMO_W = 2,
    parameter ADDR_W = (DEPTH > 1) ? $clog2(DEPTH) : 1,
    parameter NI_W = (NIS > 1) ? $clog2(NIS) : 1
) (
    input wire                  clk,
    input wire                  rst,
    input wire                  clear,
    input wire                  load_valid,
    input wire [ADDR_W-1:0]     load_addr,
    input wire [1:0]            load_op,
    input wire [FLOW_W-1:0]     load_flow,
    input wire [NODE_W-1:0]     load_peer,
    input wire [STEP_W-1:0]     load_step,
    input wire [LEN_W-1:0]      load_len,
    input wire                  load_dep_op,
    input wire [CNT_W-1:0]      load_dep_count,
    input wire [NODE_W-1:0]     load_src,
    input wire                  load_src_chk,
    input wire                  rd_en,
    input wire [ADDR_W-1:0]     rd_addr,
    input wire                  start,
    input wire [TMO_W-1:0]      timeout_cycles,
    input wire [NIS-1:0]        recv_valid,
    input wire [NIS*FLOW_W-1:0] recv_flow,
    input wire [NIS-1:0]        recv_op,
    input wire [NIS*NODE_W-1:0] recv_src,
    input wire                  send_ready,
    input wire [NIS-1:0]        ni_done
);

wire              send_valid;
wire [ADDR_W-1:0] send_entry;
wire              send_op;
wire [FLOW_W-1:0] send_flow;
wire [NODE_W-1:0] send_peer;
wire [LEN_W-1:0]  send_len;
wire [STEP_W-1:0] send_step;
wire [NI_W-1:0]   send_ni;
wire [STEP_W-1:0] step;
wire [NIS-1:0]    ni_busy;
wire              running, done, err, ev_unexp, ev_wrong_src, ev_timeout;
wire [ERR_W-1:0]  err_count;
wire [NODE_W-1:0] err_src;
wire [FLOW_W-1:0] err_flow;
wire              rd_valid, rd_entry_valid, rd_issued, rd_dep_op, rd_src_chk;
wire [1:0]        rd_op;
wire [FLOW_W-1:0] rd_flow;
wire [NODE_W-1:0] rd_peer, rd_src;
wire [STEP_W-1:0] rd_step;
wire [LEN_W-1:0]  rd_len;
wire [CNT_W-1:0]  rd_dep_count, rd_count;

nic_scheduler #(
    .DEPTH(DEPTH), .NIS(NIS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W), .LEN_W(LEN_W), .CNT_W(CNT_W),
    .ERR_W(ERR_W), .TMO_W(TMO_W)
) dut (.*);

localparam PAY_W = ADDR_W + 1 + FLOW_W + NODE_W + LEN_W + STEP_W + NI_W;
wire [PAY_W-1:0] payload = {send_entry, send_op, send_flow, send_peer, send_len, send_step, send_ni};

reg             past_valid = 1'b0;
reg             held = 1'b0;       // last cycle: a request offered, not taken, neither rst nor clear
reg [PAY_W-1:0] held_payload = {PAY_W{1'b0}};
reg             was_full = 1'b0;   // last cycle: err_count at its top value, neither rst nor clear

always @(posedge clk) begin
    past_valid <= 1'b1;
    held <= send_valid && !send_ready && !rst && !clear;
    held_payload <= payload;
    was_full <= (err_count == {ERR_W{1'b1}}) && !rst && !clear;
end

always @* begin
    if (!past_valid) assume(rst);
    if (past_valid && !rst) begin
        if (held) begin
            assert(send_valid);
            assert(payload == held_payload);
        end
        if (was_full) assert(err_count == {ERR_W{1'b1}});
    end
end

endmodule

`resetall
