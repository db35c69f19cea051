// One entry of the NIC scheduler's table (docs/nic_scheduler.md, "The table entry"): the
// fields the scheduler compares in parallel (op, flow, step, dep_op, dep_count, and the
// expected source src with its check bit src_chk) and the
// state (valid, issued, count). peer and len live in nic_sched_ram. Only the state is
// reset: a field of an invalid entry is never used (every use is gated by `valid`, and
// the read port masks an invalid entry's fields).
//
// Does the per-entry part
// of every edge: load (overrides everything), issue (send handshake or RECV retirement)
// and the associative receive match, counting matching messages and saturating at
// dep_count. Every output is a function of this entry's registers and the broadcast inputs
// of the cycle (`needs`) or of registers only (everything else).

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_sched_entry #(
    // receive ports (NIs of the node)
    parameter NIS = 1,
    // bits of a flow id
    parameter FLOW_W = 8,
    // bits of a node id (expected source)
    parameter NODE_W = 8,
    // bits of a step number
    parameter STEP_W = 8,
    // bits of a dependency count
    parameter CNT_W = 4,
    // bits of a per-port "earlier ports with the same message" count
    parameter PRIOR_W = 5,
    // 1: elig_send is the eligibility of the last cycle, registered (and not issued since);
    // 0: of this cycle (the scheduler's SCHED_PIPE)
    parameter PIPE = 0
) (
    input  wire                  clk,
    // synchronous reset or clear: the entry becomes invalid with zero fields and state
    input  wire                  rst,

    // load this entry (address decoded and op checked by the parent)
    input  wire                  load_we,
    input  wire [1:0]            load_op,
    input  wire [FLOW_W-1:0]     load_flow,
    input  wire [STEP_W-1:0]     load_step,
    input  wire                  load_dep_op,
    input  wire [CNT_W-1:0]      load_dep_count,
    input  wire [NODE_W-1:0]     load_src,
    input  wire                  load_src_chk,

    // scheduler state during the cycle
    input  wire                  running,
    input  wire [STEP_W-1:0]     active_step,
    // the send handshake takes this entry
    input  wire                  send_take,

    // receive ports, broadcast to every entry
    input  wire [NIS-1:0]        recv_valid,
    input  wire [NIS*FLOW_W-1:0] recv_flow,
    input  wire [NIS-1:0]        recv_op,
    input  wire [NIS*NODE_W-1:0] recv_src,
    // per port p: number of ports q < p with a valid message of the same flow and op
    input  wire [NIS*PRIOR_W-1:0] recv_prior,

    // needs[p]: this entry still needs port p's message (contract step 4)
    output reg  [NIS-1:0]        needs,
    // wrong_src[p]: port p's message matches this entry, which checks its source, and its
    // source is not the entry's expected one
    output reg  [NIS-1:0]        wrong_src,
    // pending: valid and not issued
    output wire                  pending,
    // pending in the active step
    output wire                  pending_now,
    // eligible to send (REDUCE or GATHER) during this cycle (PIPE 1: during the last cycle,
    // not loaded at its edge and not issued since)
    output wire                  elig_send,

    output reg                   e_valid,
    output reg                   e_issued,
    output reg  [1:0]            e_op,
    output reg  [FLOW_W-1:0]     e_flow,
    output reg  [STEP_W-1:0]     e_step,
    output reg                   e_dep_op,
    output reg  [CNT_W-1:0]      e_dep_count,
    output reg  [CNT_W-1:0]      e_count,
    output reg  [NODE_W-1:0]     e_src,
    output reg                   e_src_chk
);

`ifndef SYNTHESIS
initial begin
    if (NIS < 1 || NIS > 16) $fatal(1, "nic_sched_entry: NIS = %0d out of range 1..16", NIS);
    if (FLOW_W < 1 || FLOW_W > 16) $fatal(1, "nic_sched_entry: FLOW_W = %0d out of range 1..16", FLOW_W);
    if (NODE_W < 1 || NODE_W > 16) $fatal(1, "nic_sched_entry: NODE_W = %0d out of range 1..16", NODE_W);
    if (STEP_W < 1 || STEP_W > 16) $fatal(1, "nic_sched_entry: STEP_W = %0d out of range 1..16", STEP_W);
    if (CNT_W < 1 || CNT_W > 8) $fatal(1, "nic_sched_entry: CNT_W = %0d out of range 1..8", CNT_W);
    if (PRIOR_W < 1 || PRIOR_W > 8 || (1 << PRIOR_W) < NIS)
        $fatal(1, "nic_sched_entry: PRIOR_W = %0d out of range 1..8 or cannot count NIS - 1 = %0d ports", PRIOR_W, NIS - 1);
    if (PIPE < 0 || PIPE > 1) $fatal(1, "nic_sched_entry: PIPE = %0d out of range 0..1", PIPE);
end
`endif

localparam [1:0] OP_RECV = 2'd2;
// wide enough for count + NIS (at most 16) matching messages without overflow
localparam SUM_W = CNT_W + 6;

assign pending = e_valid && !e_issued;
assign pending_now = pending && (e_step == active_step);

wire eligible = running && pending_now && (e_count >= e_dep_count);
wire elig_send_now = eligible && (e_op != OP_RECV);
wire retire = eligible && (e_op == OP_RECV);

generate
    if (PIPE != 0) begin : g_elig_reg
        // an entry stays eligible until it is issued (counts only grow, and the step moves
        // on only when no entry of it is pending), so last cycle's eligibility and "not
        // issued" is this cycle's; a load clears it (the new entry starts unmatched)
        reg elig_q;
        always @(posedge clk) begin
            if (rst || load_we) begin
                elig_q <= 1'b0;
            end else begin
                elig_q <= elig_send_now;
            end
        end
        assign elig_send = elig_q && !e_issued;
    end else begin : g_elig_now
        assign elig_send = elig_send_now;
    end
endgenerate

// associative match of every receive port against this entry
reg [NIS-1:0]   match;
reg [SUM_W-1:0] n_match;
reg [SUM_W-1:0] sum;

always @* begin : match_logic
    integer p;
    n_match = {SUM_W{1'b0}};
    for (p = 0; p < NIS; p = p + 1) begin
        match[p] = e_valid && recv_valid[p]
            && (recv_flow[p*FLOW_W +: FLOW_W] == e_flow) && (recv_op[p] == e_dep_op);
        needs[p] = match[p] && (({{(SUM_W-CNT_W){1'b0}}, e_count}
            + {{(SUM_W-PRIOR_W){1'b0}}, recv_prior[p*PRIOR_W +: PRIOR_W]})
            < {{(SUM_W-CNT_W){1'b0}}, e_dep_count});
        wrong_src[p] = match[p] && e_src_chk && (recv_src[p*NODE_W +: NODE_W] != e_src);
        n_match = n_match + {{(SUM_W-1){1'b0}}, match[p]};
    end
    sum = {{(SUM_W-CNT_W){1'b0}}, e_count} + n_match;
end

// state: reset, loaded, updated
always @(posedge clk) begin
    if (rst) begin
        e_valid <= 1'b0;
        e_issued <= 1'b0;
        e_count <= {CNT_W{1'b0}};
    end else if (load_we) begin
        // a load overrides whatever the other updates did to this entry this cycle
        e_valid <= 1'b1;
        e_issued <= 1'b0;
        e_count <= {CNT_W{1'b0}};
    end else begin
        if (send_take || retire) begin
            e_issued <= 1'b1;
        end
        if (|match) begin
            // count saturates at dep_count
            if (sum > {{(SUM_W-CNT_W){1'b0}}, e_dep_count}) begin
                e_count <= e_dep_count;
            end else begin
                e_count <= sum[CNT_W-1:0];
            end
        end
    end
end

// fields: written by a load, never reset
always @(posedge clk) begin
    if (load_we) begin
        e_op <= load_op;
        e_flow <= load_flow;
        e_step <= load_step;
        e_dep_op <= load_dep_op;
        e_dep_count <= load_dep_count;
        e_src <= load_src;
        e_src_chk <= load_src_chk;
    end
end

endmodule

`resetall
