// Depacketiser and reduction: takes packets off the receive AXI-Stream (the packet
// format of nic_packetiser.v) and applies each beat to the local buffer word it names:
// a REDUCE beat is added to the word (nic_reduce_add: LANES lanes, FMT int32 or fp32),
// a GATHER beat overwrites it. When the beat that ends a message's last packet has been
// written, recv_valid pulses for one cycle with the message's flow, op and source (the
// scheduler's receive event: for a REDUCE, the data has been summed).
//
// Timing (ADD_LAT, the adder's pipeline registers, 0..7): a beat taken at edge k is in the
// apply register during cycle k+1, where its word is read; the sum (or the GATHER data)
// goes through ADD_LAT stages and is written at edge k+1+ADD_LAT; the receive event is
// presented during cycle k+2+ADD_LAT. With ADD_LAT = 0 the read-modify-write is within
// one cycle, so the next beat, even of the same word, reads the written value and the
// stream is always ready (except during reset). With ADD_LAT > 0 a beat in the apply
// register whose word is still in the adder's pipeline (read before that write) waits
// there until the write is done: rx_tready is low while it waits (a function of
// registers only), so the sender holds its beat and nothing is lost or summed twice.
// tid and tuser must hold for the whole packet (beat k of a packet goes to addr + k): a
// beat whose tid or tuser differs from its packet's first beat sets the sticky rx_err
// (the beat is still applied).

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_depacketiser #(
    parameter LANES = 2,
    parameter FMT = 1,
    parameter BUF_WORDS = 64,
    parameter FLOW_W = 8,
    parameter NODE_W = 8,
    parameter STEP_W = 8,
    // the adder's pipeline registers (0..7)
    parameter ADD_LAT = 0,
    // derived: buffer word address bits; do not override
    parameter BA_W = $clog2(BUF_WORDS)
) (
    input  wire                          clk,
    input  wire                          rst,

    // packets (AXI-Stream sink)
    input  wire                          rx_tvalid,
    output wire                          rx_tready,
    input  wire [LANES*32-1:0]           rx_tdata,
    input  wire                          rx_tlast,
    input  wire [NODE_W-1:0]             rx_tid,
    input  wire [BA_W+STEP_W+FLOW_W+1:0] rx_tuser,

    // local buffer: asynchronous read of the word being applied, and the write of the
    // word leaving the adder (the same word when ADD_LAT = 0)
    output wire [BA_W-1:0]               buf_raddr,
    input  wire [LANES*32-1:0]           buf_rdata,
    output wire                          buf_we,
    output wire [BA_W-1:0]               buf_waddr,
    output wire [LANES*32-1:0]           buf_wdata,

    // receive events for the scheduler
    output reg                           recv_valid,
    output reg  [FLOW_W-1:0]             recv_flow,
    output reg                           recv_op,
    output reg  [NODE_W-1:0]             recv_src,
    output reg                           rx_err
);

`ifndef SYNTHESIS
initial begin
    if (BA_W != $clog2(BUF_WORDS)) $fatal(1, "nic_depacketiser: BA_W is derived; do not override");
    if (ADD_LAT < 0 || ADD_LAT > 7) $fatal(1, "nic_depacketiser: ADD_LAT = %0d out of range 0..7", ADD_LAT);
end
`endif

wire [BA_W-1:0]   hdr_addr = rx_tuser[BA_W+STEP_W+FLOW_W+1 -: BA_W];
wire [FLOW_W-1:0] hdr_flow = rx_tuser[FLOW_W+1:2];
wire              hdr_op = rx_tuser[1];
wire              hdr_last = rx_tuser[0];

localparam HDR_W = BA_W + STEP_W + FLOW_W + 2 + NODE_W;
reg [BA_W-1:0]     beat_reg;  // beat index within the packet
reg [HDR_W-1:0]    hdr_reg;   // {tuser, tid} of the packet's first beat
reg                p_valid;
reg [BA_W-1:0]     p_addr;
reg [LANES*32-1:0] p_data;
reg                p_op;
reg                p_ev;       // the message's last beat
reg [FLOW_W-1:0]   p_flow;
reg [NODE_W-1:0]   p_src;
wire [LANES*32-1:0] sum;

// the beats in the adder's pipeline: stage s (1..ADD_LAT) holds the beat read s cycles ago;
// stage ADD_LAT is written this cycle ({valid, addr, op, ev, flow, src, GATHER data})
localparam Q_W = 1 + BA_W + 1 + 1 + FLOW_W + NODE_W + LANES*32;
localparam QN = (ADD_LAT > 0) ? ADD_LAT : 1;
wire [Q_W-1:0] q_out;   // the beat written this cycle
wire           hazard;  // the apply register's word is in the pipeline, not yet written

assign rx_tready = !rst && !(p_valid && hazard);
wire beat = rx_tvalid && rx_tready;

nic_reduce_add #(.LANES(LANES), .FMT(FMT), .ADD_LAT(ADD_LAT)) u_add (.clk(clk), .a(buf_rdata), .b(p_data), .y(sum));

wire              w_valid = q_out[Q_W-1];
wire [BA_W-1:0]   w_addr = q_out[Q_W-2 -: BA_W];
wire              w_op = q_out[Q_W-2-BA_W];
wire              w_ev = q_out[Q_W-3-BA_W];
wire [FLOW_W-1:0] w_flow = q_out[NODE_W+LANES*32 +: FLOW_W];
wire [NODE_W-1:0] w_src = q_out[LANES*32 +: NODE_W];
wire [LANES*32-1:0] w_data = q_out[LANES*32-1:0];

generate
    if (ADD_LAT == 0) begin : g_comb
        assign q_out = {p_valid, p_addr, p_op, p_ev, p_flow, p_src, p_data};
        assign hazard = 1'b0;
    end else begin : g_pipe
        reg [Q_W-1:0] q [1:QN];
        reg           hz;
        wire          advance = p_valid && !hazard;
        integer s;
        always @* begin
            hz = 1'b0;
            for (s = 1; s <= QN; s = s + 1) begin
                if (q[s][Q_W-1] && q[s][Q_W-2 -: BA_W] == p_addr) hz = 1'b1;
            end
        end
        assign hazard = hz;
        always @(posedge clk) begin
            if (rst) begin
                for (s = 1; s <= QN; s = s + 1) q[s] <= {Q_W{1'b0}};
            end else begin
                q[1] <= {advance, p_addr, p_op, p_ev, p_flow, p_src, p_data};
                for (s = 2; s <= QN; s = s + 1) q[s] <= q[s - 1];
            end
        end
        assign q_out = q[QN];
`ifdef FORMAL
        // the receive pipeline's rules (tests/rtl/formal/props_depacketiser.v proves them):
        // every beat taken is written once (beats taken minus beats written = beats in the
        // apply register and the stages), and a beat leaves the apply register (reads its
        // word) only when no stage holds an unwritten beat of the same word
        reg [3:0] f_inflight = 4'd0;
        reg [3:0] f_held;
        integer f_s;
        always @(posedge clk) begin
            if (rst) f_inflight <= 4'd0;
            else f_inflight <= f_inflight + {3'd0, beat} - {3'd0, w_valid};
        end
        always @* begin
            f_held = {3'd0, p_valid};
            for (f_s = 1; f_s <= QN; f_s = f_s + 1) f_held = f_held + {3'd0, q[f_s][Q_W-1]};
            if (!rst) begin
                assert(f_inflight == f_held);
                for (f_s = 1; f_s <= QN; f_s = f_s + 1) begin
                    if (advance && q[f_s][Q_W-1]) assert(q[f_s][Q_W-2 -: BA_W] != p_addr);
                end
            end
        end
`endif
    end
endgenerate

assign buf_raddr = p_addr;
assign buf_waddr = w_addr;
assign buf_we = w_valid;
assign buf_wdata = w_op ? w_data : sum;

always @(posedge clk) begin
    if (rst) begin
        beat_reg <= {BA_W{1'b0}};
        p_valid <= 1'b0;
        p_addr <= {BA_W{1'b0}};
        p_data <= {LANES*32{1'b0}};
        p_op <= 1'b0;
        p_ev <= 1'b0;
        p_flow <= {FLOW_W{1'b0}};
        p_src <= {NODE_W{1'b0}};
        recv_valid <= 1'b0;
        recv_flow <= {FLOW_W{1'b0}};
        recv_op <= 1'b0;
        recv_src <= {NODE_W{1'b0}};
        hdr_reg <= {HDR_W{1'b0}};
        rx_err <= 1'b0;
    end else begin
        if (!p_valid || !hazard) begin  // a waiting beat stays in the apply register
            p_valid <= beat;
        end
        if (beat) begin
            p_addr <= hdr_addr + beat_reg;
            p_data <= rx_tdata;
            p_op <= hdr_op;
            p_ev <= rx_tlast && hdr_last;
            p_flow <= hdr_flow;
            p_src <= rx_tid;
            beat_reg <= rx_tlast ? {BA_W{1'b0}} : beat_reg + 1'b1;
            if (beat_reg == {BA_W{1'b0}}) begin
                hdr_reg <= {rx_tuser, rx_tid};
            end else if (hdr_reg != {rx_tuser, rx_tid}) begin
                rx_err <= 1'b1;
            end
        end
        recv_valid <= w_valid && w_ev;
        if (w_valid && w_ev) begin
            recv_flow <= w_flow;
            recv_op <= w_op;
            recv_src <= w_src;
        end
    end
end

endmodule

`resetall
