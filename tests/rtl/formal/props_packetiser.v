// The AXI-Stream rules of nic_packetiser's transmit stream, as assertions for Yosys's SAT
// prover (hw_models.rtl.formal): once tx_tvalid is high and tx_tready low, the next cycle
// offers the same beat (tvalid held, tdata/tlast/tdest/tid/tuser unchanged), and no send
// request is accepted while a beat is on offer. Reset is asserted in the first cycle;
// every input is free after it. The packetiser's own invariants (its `ifdef FORMAL block)
// make the rules provable by one-step induction.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module props_packetiser #(
    parameter LANES = 1,
    parameter BUF_WORDS = 4,
    parameter FLOW_W = 2,
    parameter NODE_W = 2,
    parameter STEP_W = 2,
    parameter LEN_W = 4,
    parameter BA_W = $clog2(BUF_WORDS)
) (
    input wire                 clk,
    input wire                 rst,
    input wire [NODE_W-1:0]    node_id,
    input wire [LEN_W-1:0]     cfg_pkt_beats,
    input wire                 send_valid,
    input wire                 send_op,
    input wire [FLOW_W-1:0]    send_flow,
    input wire [NODE_W-1:0]    send_peer,
    input wire [LEN_W-1:0]     send_len,
    input wire [STEP_W-1:0]    send_step,
    input wire [LANES*32-1:0]  buf_rdata,
    input wire                 tx_tready
);

localparam PAY_W = LANES*32 + 1 + 2*NODE_W + BA_W + STEP_W + FLOW_W + 2;

wire                          send_ready;
wire                          ni_done;
wire                          req_err;
wire [BA_W-1:0]               buf_raddr;
wire                          tx_tvalid;
wire [LANES*32-1:0]           tx_tdata;
wire                          tx_tlast;
wire [NODE_W-1:0]             tx_tdest;
wire [NODE_W-1:0]             tx_tid;
wire [BA_W+STEP_W+FLOW_W+1:0] tx_tuser;

nic_packetiser #(
    .LANES(LANES), .BUF_WORDS(BUF_WORDS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W), .LEN_W(LEN_W)
) dut (
    .clk(clk), .rst(rst), .node_id(node_id), .cfg_pkt_beats(cfg_pkt_beats),
    .send_valid(send_valid), .send_ready(send_ready), .send_op(send_op), .send_flow(send_flow),
    .send_peer(send_peer), .send_len(send_len), .send_step(send_step), .ni_done(ni_done), .req_err(req_err),
    .buf_raddr(buf_raddr), .buf_rdata(buf_rdata),
    .tx_tvalid(tx_tvalid), .tx_tready(tx_tready), .tx_tdata(tx_tdata), .tx_tlast(tx_tlast), .tx_tdest(tx_tdest),
    .tx_tid(tx_tid), .tx_tuser(tx_tuser)
);

wire [PAY_W-1:0] payload = {tx_tdata, tx_tlast, tx_tdest, tx_tid, tx_tuser};

reg             past_valid = 1'b0;
reg             held = 1'b0;  // last cycle: a beat on offer, not taken, no reset
reg [PAY_W-1:0] held_payload = {PAY_W{1'b0}};

always @(posedge clk) begin
    past_valid <= 1'b1;
    held <= tx_tvalid && !tx_tready && !rst;
    held_payload <= payload;
end

always @* begin
    if (!past_valid) assume(rst);
    if (past_valid && !rst) begin
        assert(!(tx_tvalid && send_ready));
        if (held) begin
            assert(tx_tvalid);
            assert(payload == held_payload);
        end
    end
end

endmodule

`resetall
