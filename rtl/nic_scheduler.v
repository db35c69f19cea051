// NIC scheduler: runs one node's collective schedule table (MultiTree-style), cycle for
// cycle as specified in docs/nic_scheduler.md (the contract shared with the cycle model
// nic.scheduler; the model-vs-RTL regression in hw_models/rtl compares every output on
// every cycle).
//
// Structure
//   nic_sched_entry  x DEPTH  table entry: compared fields, valid/issued/count, receive match
//   nic_sched_ram    x 2      peer and len (LUT/block RAM): send request and read port copies
//   nic_sched_lowest          lowest-set-bit pickers (send tie-break, free NI, first pending)
//   nic_sched_mux             one-hot field multiplexers (send fields, read port, next step)
//
// Every output is a function of registered state only; all inputs are sampled at the
// rising edge of clk. rst and clear are synchronous and active high.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_scheduler #(
    // table entries (1..4096)
    parameter DEPTH = 64,
    // NIs of the node: sends in flight at once, and receive ports (1..16)
    parameter NIS = 1,
    // bits of a flow (tree / chunk) id (1..16)
    parameter FLOW_W = 8,
    // bits of a node id: peer, source (1..16)
    parameter NODE_W = 8,
    // bits of a step number (1..16)
    parameter STEP_W = 8,
    // bits of a message length in elements (1..32)
    parameter LEN_W = 24,
    // bits of a dependency count (1..8)
    parameter CNT_W = 4,
    // bits of the saturating error counter (1..32)
    parameter ERR_W = 16,
    // bits of the timeout count timeout_cycles (1..32)
    parameter TMO_W = 16,
    // pipeline registers (0..1; docs/nic_scheduler.md, "Pipelined variant"): 1 registers each
    // entry's send eligibility (an entry is offered one cycle later) and the receive checks
    // (a receive's errors count one edge later); 0 is the contract as written
    parameter SCHED_PIPE = 0,
    // derived: bits of a table address, max(1, ceil(log2(DEPTH))); do not override
    parameter ADDR_W = (DEPTH > 1) ? $clog2(DEPTH) : 1,
    // derived: bits of an NI number, max(1, ceil(log2(NIS))); do not override
    parameter NI_W = (NIS > 1) ? $clog2(NIS) : 1
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire                  clear,

    // table load
    input  wire                  load_valid,
    input  wire [ADDR_W-1:0]     load_addr,
    input  wire [1:0]            load_op,
    input  wire [FLOW_W-1:0]     load_flow,
    input  wire [NODE_W-1:0]     load_peer,
    input  wire [STEP_W-1:0]     load_step,
    input  wire [LEN_W-1:0]      load_len,
    input  wire                  load_dep_op,
    input  wire [CNT_W-1:0]      load_dep_count,
    // expected source of the entry's messages, and whether to check it
    input  wire [NODE_W-1:0]     load_src,
    input  wire                  load_src_chk,

    // table read (result registered, presented next cycle)
    input  wire                  rd_en,
    input  wire [ADDR_W-1:0]     rd_addr,

    input  wire                  start,
    // cycles in RUN without progress that are an error (0: no timeout)
    input  wire [TMO_W-1:0]      timeout_cycles,

    // receive ports
    input  wire [NIS-1:0]        recv_valid,
    input  wire [NIS*FLOW_W-1:0] recv_flow,
    input  wire [NIS-1:0]        recv_op,
    input  wire [NIS*NODE_W-1:0] recv_src,

    // send requests (valid/ready) and NI completions
    input  wire                  send_ready,
    input  wire [NIS-1:0]        ni_done,
    output wire                  send_valid,
    output wire [ADDR_W-1:0]     send_entry,
    output wire                  send_op,
    output wire [FLOW_W-1:0]     send_flow,
    output wire [NODE_W-1:0]     send_peer,
    output wire [LEN_W-1:0]      send_len,
    output wire [STEP_W-1:0]     send_step,
    output wire [NI_W-1:0]       send_ni,

    // status
    output wire [STEP_W-1:0]     step,
    output wire [NIS-1:0]        ni_busy,
    output wire                  running,
    output wire                  done,
    output wire                  err,
    output wire [ERR_W-1:0]      err_count,
    output wire [NODE_W-1:0]     err_src,
    output wire [FLOW_W-1:0]     err_flow,
    // error events of the last edge: an unexpected message, a message from a wrong
    // source, a timeout (one-cycle pulses)
    output wire                  ev_unexp,
    output wire                  ev_wrong_src,
    output wire                  ev_timeout,

    // read port
    output wire                  rd_valid,
    output wire                  rd_entry_valid,
    output wire                  rd_issued,
    output wire [1:0]            rd_op,
    output wire [FLOW_W-1:0]     rd_flow,
    output wire [NODE_W-1:0]     rd_peer,
    output wire [STEP_W-1:0]     rd_step,
    output wire [LEN_W-1:0]      rd_len,
    output wire                  rd_dep_op,
    output wire [CNT_W-1:0]      rd_dep_count,
    output wire [CNT_W-1:0]      rd_count,
    output wire [NODE_W-1:0]     rd_src,
    output wire                  rd_src_chk
);

// ---- parameter check (simulation and lint only; synthesis trusts the parameters) ----
`ifndef SYNTHESIS
initial begin
    if (DEPTH < 1 || DEPTH > 4096) $fatal(1, "nic_scheduler: DEPTH = %0d out of range 1..4096", DEPTH);
    if (NIS < 1 || NIS > 16) $fatal(1, "nic_scheduler: NIS = %0d out of range 1..16", NIS);
    if (FLOW_W < 1 || FLOW_W > 16) $fatal(1, "nic_scheduler: FLOW_W = %0d out of range 1..16", FLOW_W);
    if (NODE_W < 1 || NODE_W > 16) $fatal(1, "nic_scheduler: NODE_W = %0d out of range 1..16", NODE_W);
    if (STEP_W < 1 || STEP_W > 16) $fatal(1, "nic_scheduler: STEP_W = %0d out of range 1..16", STEP_W);
    if (LEN_W < 1 || LEN_W > 32) $fatal(1, "nic_scheduler: LEN_W = %0d out of range 1..32", LEN_W);
    if (CNT_W < 1 || CNT_W > 8) $fatal(1, "nic_scheduler: CNT_W = %0d out of range 1..8", CNT_W);
    if (ERR_W < 1 || ERR_W > 32) $fatal(1, "nic_scheduler: ERR_W = %0d out of range 1..32", ERR_W);
    if (TMO_W < 1 || TMO_W > 32) $fatal(1, "nic_scheduler: TMO_W = %0d out of range 1..32", TMO_W);
    if (SCHED_PIPE < 0 || SCHED_PIPE > 1) $fatal(1, "nic_scheduler: SCHED_PIPE = %0d out of range 0..1", SCHED_PIPE);
    if (ADDR_W != ((DEPTH > 1) ? $clog2(DEPTH) : 1)) $fatal(1, "nic_scheduler: ADDR_W is derived; do not override");
    if (NI_W != ((NIS > 1) ? $clog2(NIS) : 1)) $fatal(1, "nic_scheduler: NI_W is derived; do not override");
end
`endif

localparam [1:0] OP_BAD = 2'd3;
localparam [1:0] ST_IDLE = 2'd0;
localparam [1:0] ST_RUN = 2'd1;
localparam [1:0] ST_DONE = 2'd2;
// per-port count of earlier ports with the same message: up to NIS-1 <= 15
localparam PRIOR_W = 5;
// errors in one cycle: up to NIS unexpected + NIS wrong-source + NIS spurious dones
// + 1 bad load + 1 timeout <= 50
localparam EADD_W = 6;
// width of a send record from the entries: op bit, flow (peer and len come from the RAM,
// the step is the active step)
localparam SREC_W = 1 + FLOW_W;
// width of a read record from the entries: valid, issued, op, flow, step, dep_op, dep_count, count,
// src, src_chk
localparam RREC_W = 1 + 1 + 2 + FLOW_W + STEP_W + 1 + CNT_W + CNT_W + NODE_W + 1;
// width of a RAM word: peer, len
localparam MEM_W = NODE_W + LEN_W;

// ---- registered scheduler state ----------------------------------------------------
reg [1:0]        state_reg;
reg [STEP_W-1:0] active_step_reg;
reg [NIS-1:0]    ni_busy_reg;
reg              err_reg;
reg [ERR_W-1:0]  err_count_reg;
reg [NODE_W-1:0] err_src_reg;
reg [FLOW_W-1:0] err_flow_reg;
reg              err_seen_reg;  // an unexpected message has been recorded
reg              rd_valid_reg;
reg              ev_unexp_reg;
reg              ev_wrong_src_reg;
reg              ev_timeout_reg;
reg [TMO_W-1:0]  tmo_cnt_reg;
reg [RREC_W-1:0] rd_rec_reg;
wire [MEM_W-1:0] rd_mem_q;

wire reset_any = rst || clear;
wire run = (state_reg == ST_RUN);

// ---- receive ports: earlier ports carrying the same message --------------------------
reg [NIS*PRIOR_W-1:0] recv_prior;

always @* begin : prior_logic
    integer p;
    integer q;
    reg [PRIOR_W-1:0] n;
    for (p = 0; p < NIS; p = p + 1) begin
        n = {PRIOR_W{1'b0}};
        for (q = 0; q < p; q = q + 1) begin
            if (recv_valid[q] && recv_flow[q*FLOW_W +: FLOW_W] == recv_flow[p*FLOW_W +: FLOW_W]
                    && recv_op[q] == recv_op[p]) begin
                n = n + 1'b1;
            end
        end
        recv_prior[p*PRIOR_W +: PRIOR_W] = n;
    end
end

// ---- the table -----------------------------------------------------------------------
wire             load_ok = load_valid && ({{(32-ADDR_W){1'b0}}, load_addr} < DEPTH) && (load_op != OP_BAD);
wire             load_bad = load_valid && !load_ok;

wire [DEPTH-1:0]       e_pending;
wire [DEPTH-1:0]       e_pending_now;
wire [DEPTH-1:0]       e_elig_send;
wire [DEPTH*NIS-1:0]   e_needs;
wire [DEPTH*NIS-1:0]   e_wrong;
wire [DEPTH*SREC_W-1:0] e_srec;
wire [DEPTH*RREC_W-1:0] e_rrec;
wire [DEPTH*STEP_W-1:0] e_steps;
wire [DEPTH-1:0]       send_oh;
wire                   send_any;
wire                   send_fire;
wire                   send_take_any;

genvar gi;
generate
    for (gi = 0; gi < DEPTH; gi = gi + 1) begin : g_entry
        wire             v;
        wire             iss;
        wire [1:0]       op;
        wire [FLOW_W-1:0] flow;
        wire [STEP_W-1:0] stp;
        wire             dop;
        wire [CNT_W-1:0] dcnt;
        wire [CNT_W-1:0] cnt;
        wire [NODE_W-1:0] src;
        wire             chk;

        nic_sched_entry #(
            .NIS(NIS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W), .CNT_W(CNT_W), .PRIOR_W(PRIOR_W),
            .PIPE(SCHED_PIPE)
        ) u_entry (
            .clk(clk),
            .rst(reset_any),
            .load_we(load_ok && (load_addr == gi[ADDR_W-1:0])),
            .load_op(load_op),
            .load_flow(load_flow),
            .load_step(load_step),
            .load_dep_op(load_dep_op),
            .load_dep_count(load_dep_count),
            .load_src(load_src),
            .load_src_chk(load_src_chk),
            .running(run),
            .active_step(active_step_reg),
            .send_take(send_take_any && send_oh[gi]),
            .recv_valid(recv_valid),
            .recv_flow(recv_flow),
            .recv_op(recv_op),
            .recv_src(recv_src),
            .recv_prior(recv_prior),
            .needs(e_needs[gi*NIS +: NIS]),
            .wrong_src(e_wrong[gi*NIS +: NIS]),
            .pending(e_pending[gi]),
            .pending_now(e_pending_now[gi]),
            .elig_send(e_elig_send[gi]),
            .e_valid(v),
            .e_issued(iss),
            .e_op(op),
            .e_flow(flow),
            .e_step(stp),
            .e_dep_op(dop),
            .e_dep_count(dcnt),
            .e_count(cnt),
            .e_src(src),
            .e_src_chk(chk)
        );

        assign e_srec[gi*SREC_W +: SREC_W] = {op[0], flow};
        // an invalid entry reads as zeros (its fields are not reset)
        assign e_rrec[gi*RREC_W +: RREC_W] = v ? {v, iss, op, flow, stp, dop, dcnt, cnt, src, chk} : {RREC_W{1'b0}};
        assign e_steps[gi*STEP_W +: STEP_W] = stp;
    end
endgenerate

// ---- send request: an AXI-Stream source with an output register ------------------------
// The register holds the offered request (send_valid and its payload) until send_ready
// takes it; it takes the next one in the same edge as it is emptied or while it is empty
// (full throughput). The entry it takes becomes issued as it is taken into the register,
// so the selection never offers it again; its NI is reserved while the request is held
// and becomes busy with the handshake.
reg              out_valid_reg;
reg [ADDR_W-1:0] out_entry_reg;
reg [NI_W-1:0]   out_ni_reg;
reg              out_op_reg;
reg [FLOW_W-1:0] out_flow_reg;
wire [MEM_W-1:0] out_mem_q;  // peer and len: the RAM's read register
reg [STEP_W-1:0] out_step_reg;

reg  [NIS-1:0]    held_oh;
wire [NIS-1:0]    free_oh_unused;
wire [NI_W-1:0]   free_idx;
wire              free_any;
wire [ADDR_W-1:0] send_idx;
wire [SREC_W-1:0] send_rec;

// the held request's NI, one-hot (zero when nothing is held)
always @* begin : held_decode
    integer i;
    for (i = 0; i < NIS; i = i + 1) begin
        held_oh[i] = out_valid_reg && (out_ni_reg == i[NI_W-1:0]);
    end
end

// an NI is free when it is not sending and not reserved by the held request
nic_sched_lowest #(.N(NIS), .IDX_W(NI_W)) u_free (
    .req(~(ni_busy_reg | held_oh)),
    .onehot(free_oh_unused), .index(free_idx), .any(free_any)
);

nic_sched_lowest #(.N(DEPTH), .IDX_W(ADDR_W)) u_send_pick (
    .req(e_elig_send), .onehot(send_oh), .index(send_idx), .any(send_any)
);

nic_sched_mux #(.N(DEPTH), .W(SREC_W)) u_send_mux (
    .data(e_srec), .sel(send_oh), .out(send_rec)
);

assign send_fire = out_valid_reg && send_ready;
// the register takes a request when it is empty or being emptied, and one is eligible
assign send_take_any = (!out_valid_reg || send_ready) && send_any && free_any;

assign send_valid = out_valid_reg;
assign send_entry = out_entry_reg;
assign send_ni = out_ni_reg;
assign send_op = out_op_reg;
assign send_flow = out_flow_reg;
assign {send_peer, send_len} = out_mem_q;

// peer and len: one RAM copy per read port (the request register and the read port)
nic_sched_ram #(.DEPTH(DEPTH), .W(MEM_W), .ADDR_W(ADDR_W)) u_send_ram (
    .clk(clk), .rst(reset_any), .we(load_ok), .waddr(load_addr), .wdata({load_peer, load_len}),
    .re(send_take_any), .raddr(send_idx), .q(out_mem_q)
);

nic_sched_ram #(.DEPTH(DEPTH), .W(MEM_W), .ADDR_W(ADDR_W)) u_rd_ram (
    .clk(clk), .rst(reset_any), .we(load_ok), .waddr(load_addr), .wdata({load_peer, load_len}),
    .re(rd_en), .raddr(rd_addr), .q(rd_mem_q)
);
assign send_step = out_step_reg;

// ---- first pending entry and the step after this one ---------------------------------
wire [DEPTH-1:0]  first_oh;
wire [ADDR_W-1:0] first_idx_unused;
wire              any_pending;
wire [STEP_W-1:0] next_step;

nic_sched_lowest #(.N(DEPTH), .IDX_W(ADDR_W)) u_first_pending (
    .req(e_pending), .onehot(first_oh), .index(first_idx_unused), .any(any_pending)
);

nic_sched_mux #(.N(DEPTH), .W(STEP_W)) u_next_step_mux (
    .data(e_steps), .sel(first_oh), .out(next_step)
);

wire step_over = run && !(|e_pending_now) && (ni_busy_reg == {NIS{1'b0}}) && !out_valid_reg;

// ---- receives: unexpected messages (no entry needs them) -----------------------------
reg [NIS-1:0] needed;
reg [NIS-1:0] wrong;  // some checking entry of the message's flow and op expects another source

always @* begin : needed_logic
    integer i;
    needed = {NIS{1'b0}};
    wrong = {NIS{1'b0}};
    for (i = 0; i < DEPTH; i = i + 1) begin
        needed = needed | e_needs[i*NIS +: NIS];
        wrong = wrong | e_wrong[i*NIS +: NIS];
    end
end

// the receive checks the error logic reads: this cycle's (SCHED_PIPE 0) or the last
// cycle's, registered (SCHED_PIPE 1)
wire [NIS-1:0]        rx_valid;
wire [NIS-1:0]        rx_needed;
wire [NIS-1:0]        rx_wrong;
wire [NIS*NODE_W-1:0] rx_src;
wire [NIS*FLOW_W-1:0] rx_flow;

generate
    if (SCHED_PIPE != 0) begin : g_rx_reg
        reg [NIS-1:0]        valid_q;
        reg [NIS-1:0]        needed_q;
        reg [NIS-1:0]        wrong_q;
        reg [NIS*NODE_W-1:0] src_q;
        reg [NIS*FLOW_W-1:0] flow_q;
        always @(posedge clk) begin
            if (reset_any) begin
                valid_q <= {NIS{1'b0}};
                needed_q <= {NIS{1'b0}};
                wrong_q <= {NIS{1'b0}};
            end else begin
                valid_q <= recv_valid;
                needed_q <= needed;
                wrong_q <= wrong;
            end
            // read only with valid_q
            src_q <= recv_src;
            flow_q <= recv_flow;
        end
        assign rx_valid = valid_q;
        assign rx_needed = needed_q;
        assign rx_wrong = wrong_q;
        assign rx_src = src_q;
        assign rx_flow = flow_q;
    end else begin : g_rx_now
        assign rx_valid = recv_valid;
        assign rx_needed = needed;
        assign rx_wrong = wrong;
        assign rx_src = recv_src;
        assign rx_flow = recv_flow;
    end
endgenerate

wire [NIS-1:0] unexpected = rx_valid & ~rx_needed;
wire [NIS-1:0] spurious = ni_done & ~ni_busy_reg;

wire [NIS-1:0]  unexp_oh;
wire [NI_W-1:0] unexp_idx_unused;
wire            unexp_any;
wire [NODE_W-1:0] unexp_src;
wire [FLOW_W-1:0] unexp_flow;

nic_sched_lowest #(.N(NIS), .IDX_W(NI_W)) u_unexp_pick (
    .req(unexpected), .onehot(unexp_oh), .index(unexp_idx_unused), .any(unexp_any)
);

nic_sched_mux #(.N(NIS), .W(NODE_W)) u_unexp_src_mux (
    .data(rx_src), .sel(unexp_oh), .out(unexp_src)
);

nic_sched_mux #(.N(NIS), .W(FLOW_W)) u_unexp_flow_mux (
    .data(rx_flow), .sel(unexp_oh), .out(unexp_flow)
);

// errors of this cycle and the saturating counter
reg [EADD_W-1:0]       n_err;
reg [ERR_W+EADD_W-1:0] err_sum;
localparam [ERR_W+EADD_W-1:0] ERR_MAX = {{EADD_W{1'b0}}, {ERR_W{1'b1}}};

// timeout: timeout_cycles consecutive cycles in RUN without progress (a send handshake,
// a receive, an ni_done); the counter stops there, so a stall is one error
wire progress = send_fire || (|recv_valid) || (|ni_done);
wire tmo_clear = !run || progress || (timeout_cycles == {TMO_W{1'b0}});
wire tmo_inc = !tmo_clear && (tmo_cnt_reg < timeout_cycles);
wire [TMO_W-1:0] tmo_next = tmo_cnt_reg + 1'b1;
wire timeout = tmo_inc && (tmo_next == timeout_cycles);

always @* begin : err_logic
    integer p;
    n_err = {{(EADD_W-1){1'b0}}, load_bad} + {{(EADD_W-1){1'b0}}, timeout};
    for (p = 0; p < NIS; p = p + 1) begin
        n_err = n_err + {{(EADD_W-1){1'b0}}, unexpected[p]} + {{(EADD_W-1){1'b0}}, spurious[p]}
            + {{(EADD_W-1){1'b0}}, rx_wrong[p]};
    end
    err_sum = {{EADD_W{1'b0}}, err_count_reg} + {{ERR_W{1'b0}}, n_err};
end

// ---- read port -----------------------------------------------------------------------
reg [DEPTH-1:0] rd_oh;
wire [RREC_W-1:0] rd_rec;

always @* begin : rd_decode
    integer i;
    for (i = 0; i < DEPTH; i = i + 1) begin
        rd_oh[i] = (rd_addr == i[ADDR_W-1:0]);
    end
end

nic_sched_mux #(.N(DEPTH), .W(RREC_W)) u_rd_mux (
    .data(e_rrec), .sel(rd_oh), .out(rd_rec)
);

// ---- registers -----------------------------------------------------------------------
always @(posedge clk) begin
    if (reset_any) begin
        state_reg <= ST_IDLE;
        active_step_reg <= {STEP_W{1'b0}};
        ni_busy_reg <= {NIS{1'b0}};
        err_reg <= 1'b0;
        err_count_reg <= {ERR_W{1'b0}};
        err_src_reg <= {NODE_W{1'b0}};
        err_flow_reg <= {FLOW_W{1'b0}};
        err_seen_reg <= 1'b0;
        ev_unexp_reg <= 1'b0;
        ev_wrong_src_reg <= 1'b0;
        ev_timeout_reg <= 1'b0;
        tmo_cnt_reg <= {TMO_W{1'b0}};
        rd_valid_reg <= 1'b0;
        rd_rec_reg <= {RREC_W{1'b0}};
        out_valid_reg <= 1'b0;
        out_entry_reg <= {ADDR_W{1'b0}};
        out_ni_reg <= {NI_W{1'b0}};
        out_op_reg <= 1'b0;
        out_flow_reg <= {FLOW_W{1'b0}};
        out_step_reg <= {STEP_W{1'b0}};
    end else begin
        // NIs: the handshake makes the held request's NI busy; ni_done frees a busy one
        ni_busy_reg <= (ni_busy_reg & ~ni_done) | (send_fire ? held_oh : {NIS{1'b0}});

        // send request register: take the lowest eligible entry and the lowest free NI,
        // or empty after a handshake; the payload holds while send_valid is low
        if (send_take_any) begin
            out_valid_reg <= 1'b1;
            out_entry_reg <= send_idx;
            out_ni_reg <= free_idx;
            {out_op_reg, out_flow_reg} <= send_rec;
            out_step_reg <= active_step_reg;
        end else if (send_fire) begin
            out_valid_reg <= 1'b0;
        end

        // errors
        if (n_err != {EADD_W{1'b0}}) begin
            err_reg <= 1'b1;
            err_count_reg <= (err_sum > ERR_MAX) ? {ERR_W{1'b1}} : err_sum[ERR_W-1:0];
        end
        ev_unexp_reg <= unexp_any;
        ev_wrong_src_reg <= |rx_wrong;
        ev_timeout_reg <= timeout;
        if (tmo_clear) begin
            tmo_cnt_reg <= {TMO_W{1'b0}};
        end else if (tmo_inc) begin
            tmo_cnt_reg <= tmo_next;
        end
        if (unexp_any && !err_seen_reg) begin
            err_seen_reg <= 1'b1;
            err_src_reg <= unexp_src;
            err_flow_reg <= unexp_flow;
        end

        // run state
        case (state_reg)
            ST_IDLE, ST_DONE: begin
                if (start) begin
                    state_reg <= ST_RUN;
                    active_step_reg <= next_step;
                end
            end
            ST_RUN: begin
                if (step_over) begin
                    if (any_pending) begin
                        active_step_reg <= next_step;
                    end else begin
                        state_reg <= ST_DONE;
                    end
                end
            end
            default: begin
                state_reg <= state_reg;
            end
        endcase

        // read port: the entry as it was during the cycle; out of range reads as zero
        rd_valid_reg <= rd_en;
        if (rd_en) begin
            rd_rec_reg <= rd_rec;
        end
    end
end

// ---- outputs -------------------------------------------------------------------------
assign step = active_step_reg;
assign ni_busy = ni_busy_reg;
assign running = run;
assign done = (state_reg == ST_DONE);
assign err = err_reg;
assign err_count = err_count_reg;
assign err_src = err_src_reg;
assign err_flow = err_flow_reg;
assign ev_unexp = ev_unexp_reg;
assign ev_wrong_src = ev_wrong_src_reg;
assign ev_timeout = ev_timeout_reg;
assign rd_valid = rd_valid_reg;
assign {rd_entry_valid, rd_issued, rd_op, rd_flow, rd_step, rd_dep_op, rd_dep_count, rd_count, rd_src, rd_src_chk}
    = rd_rec_reg;
// the RAM holds stale words for invalid entries (and none beyond DEPTH): masked
assign {rd_peer, rd_len} = rd_entry_valid ? rd_mem_q : {MEM_W{1'b0}};

endmodule

`resetall
