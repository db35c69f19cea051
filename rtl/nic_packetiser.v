// Packetiser: turns the scheduler's send requests into packets on an AXI-Stream.
//
// A request (send_valid/send_ready, the scheduler's registered send interface) names a
// chunk: flow f of a vector split into equal chunks of send_len elements, so the chunk is
// buffer words [f*beats, (f+1)*beats) with beats = send_len / LANES. The packetiser
// reads those words from the local buffer (asynchronous read port) one per beat and sends
// them as packets of cfg_pkt_beats beats (the last one shorter), or as one packet for
// the whole chunk when cfg_pkt_beats is 0 (cfg_pkt_beats is sampled with the request).
//
// Packet format (every beat of a packet carries the same sideband):
//   tdata                 LANES elements, element l in bits l*32 +: 32
//   tdest                 destination node (send_peer)
//   tid                   source node (node_id)
//   tuser                 {addr, step, flow, op, last}:
//     last   bit 0        this is the message's last packet
//     op     bit 1        0 REDUCE, 1 GATHER
//     flow   FLOW_W bits  the chunk's flow
//     step   STEP_W bits  the schedule step (priority)
//     addr   BA_W bits    buffer word of the packet's first beat (beat k goes to addr + k)
//   tlast                 the packet's last beat
//
// The stream has an output register: tvalid and the payload hold while tready is low.
// The request is accepted (send_ready) only while no message is in progress; ni_done
// pulses for one cycle after the message's last beat is taken. A request of fewer than
// LANES elements sends nothing and reports ni_done at once.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_packetiser #(
    // elements per beat: 1, 2, 4, 8 or 16
    parameter LANES = 2,
    // buffer words (2..65536)
    parameter BUF_WORDS = 64,
    // bits of a flow id, a node id, a step number, a message length in elements
    parameter FLOW_W = 8,
    parameter NODE_W = 8,
    parameter STEP_W = 8,
    parameter LEN_W = 24,
    // derived: buffer word address bits; do not override
    parameter BA_W = $clog2(BUF_WORDS)
) (
    input  wire                          clk,
    input  wire                          rst,
    input  wire [NODE_W-1:0]             node_id,
    input  wire [LEN_W-1:0]              cfg_pkt_beats,

    // send requests (AXI-Stream sink)
    input  wire                          send_valid,
    output wire                          send_ready,
    input  wire                          send_op,
    input  wire [FLOW_W-1:0]             send_flow,
    input  wire [NODE_W-1:0]             send_peer,
    input  wire [LEN_W-1:0]              send_len,
    input  wire [STEP_W-1:0]             send_step,
    output reg                           ni_done,
    // sticky: a request whose chunk is not whole words or does not lie in the buffer
    // (it is sent anyway, its addresses wrapping)
    output reg                           req_err,

    // local buffer read port (asynchronous)
    output wire [BA_W-1:0]               buf_raddr,
    input  wire [LANES*32-1:0]           buf_rdata,

    // packets (AXI-Stream source)
    output reg                           tx_tvalid,
    input  wire                          tx_tready,
    output reg  [LANES*32-1:0]           tx_tdata,
    output reg                           tx_tlast,
    output reg  [NODE_W-1:0]             tx_tdest,
    output reg  [NODE_W-1:0]             tx_tid,
    output reg  [BA_W+STEP_W+FLOW_W+1:0] tx_tuser
);

localparam LG_LANES = $clog2(LANES);
localparam PROD_W = FLOW_W + LEN_W;

`ifndef SYNTHESIS
initial begin
    if (LANES < 1 || LANES > 16 || (LANES & (LANES - 1)) != 0)
        $fatal(1, "nic_packetiser: LANES = %0d must be 1, 2, 4, 8 or 16", LANES);
    if (BUF_WORDS < 2 || BUF_WORDS > 65536) $fatal(1, "nic_packetiser: BUF_WORDS = %0d out of range 2..65536", BUF_WORDS);
    if (BA_W != $clog2(BUF_WORDS)) $fatal(1, "nic_packetiser: BA_W is derived; do not override");
end
`endif

reg              active_reg;  // a message is in progress
reg              op_reg;
reg [FLOW_W-1:0] flow_reg;
reg [STEP_W-1:0] step_reg;
reg [LEN_W-1:0]  cfg_reg;     // packet size of this message (0: whole message)
reg [LEN_W-1:0]  left_reg;    // beats still to be loaded into the output register
reg [LEN_W-1:0]  pkt_left_reg; // beats still to be loaded of the current packet (0: next beat starts one)
reg [BA_W-1:0]   addr_reg;    // next buffer word
reg [BA_W-1:0]   pkt_addr_reg;
reg              pkt_last_reg;

wire [LEN_W-1:0]  req_beats = send_len >> LG_LANES;
wire [PROD_W-1:0] req_base_full = send_flow * req_beats;
wire [BA_W-1:0]   req_base = req_base_full[BA_W-1:0];
localparam [63:0] WORDS64 = {32'd0, BUF_WORDS[31:0]};
wire [63:0] req_end = {{(64-PROD_W){1'b0}}, req_base_full} + {{(64-LEN_W){1'b0}}, req_beats};
wire        req_bad = (req_end > WORDS64) || ((req_beats << LG_LANES) != send_len);

assign send_ready = !active_reg && !rst;
wire accept = send_valid && send_ready;
wire load = active_reg && (left_reg != {LEN_W{1'b0}}) && (!tx_tvalid || tx_tready);
wire fire = tx_tvalid && tx_tready;
wire final_beat = fire && tx_tlast && tx_tuser[0];

// the beat being loaded: does it start a packet, how long is that packet
wire             starts_pkt = (pkt_left_reg == {LEN_W{1'b0}});
wire [LEN_W-1:0] new_pkt = ((cfg_reg == {LEN_W{1'b0}}) || (cfg_reg >= left_reg)) ? left_reg : cfg_reg;
wire [LEN_W-1:0] pkt_rem = starts_pkt ? new_pkt : pkt_left_reg;
wire [BA_W-1:0]  cur_pkt_addr = starts_pkt ? addr_reg : pkt_addr_reg;
wire             cur_pkt_last = starts_pkt ? (new_pkt == left_reg) : pkt_last_reg;

assign buf_raddr = addr_reg;

always @(posedge clk) begin
    if (rst) begin
        active_reg <= 1'b0;
        op_reg <= 1'b0;
        flow_reg <= {FLOW_W{1'b0}};
        step_reg <= {STEP_W{1'b0}};
        cfg_reg <= {LEN_W{1'b0}};
        left_reg <= {LEN_W{1'b0}};
        pkt_left_reg <= {LEN_W{1'b0}};
        addr_reg <= {BA_W{1'b0}};
        pkt_addr_reg <= {BA_W{1'b0}};
        pkt_last_reg <= 1'b0;
        ni_done <= 1'b0;
        req_err <= 1'b0;
        tx_tvalid <= 1'b0;
        tx_tdata <= {LANES*32{1'b0}};
        tx_tlast <= 1'b0;
        tx_tdest <= {NODE_W{1'b0}};
        tx_tid <= {NODE_W{1'b0}};
        tx_tuser <= {(BA_W+STEP_W+FLOW_W+2){1'b0}};
    end else begin
        ni_done <= final_beat || (accept && req_beats == {LEN_W{1'b0}});
        if (accept && req_bad) begin
            req_err <= 1'b1;
        end
        if (accept) begin
            active_reg <= (req_beats != {LEN_W{1'b0}});
            op_reg <= send_op;
            flow_reg <= send_flow;
            step_reg <= send_step;
            cfg_reg <= cfg_pkt_beats;
            left_reg <= req_beats;
            pkt_left_reg <= {LEN_W{1'b0}};
            addr_reg <= req_base;
            tx_tdest <= send_peer;
            tx_tid <= node_id;
        end else if (final_beat) begin
            active_reg <= 1'b0;
        end
        if (load) begin
            tx_tvalid <= 1'b1;
            tx_tdata <= buf_rdata;
            tx_tlast <= (pkt_rem == {{(LEN_W-1){1'b0}}, 1'b1});
            tx_tuser <= {cur_pkt_addr, step_reg, flow_reg, op_reg, cur_pkt_last};
            pkt_left_reg <= pkt_rem - 1'b1;
            pkt_addr_reg <= cur_pkt_addr;
            pkt_last_reg <= cur_pkt_last;
            left_reg <= left_reg - 1'b1;
            addr_reg <= addr_reg + 1'b1;
        end else if (fire) begin
            tx_tvalid <= 1'b0;
        end
    end
end

`ifdef FORMAL
// Invariants of every state reachable from reset, so that the stream rules
// (tests/rtl/formal/props_packetiser.v) are proved by one-step temporal induction: a
// beat on offer belongs to the message in progress; the message's final beat leaves no
// word; the packet in progress never outruns the message, and when it is the message's
// last packet it ends with it.
always @* begin
    if (!rst) begin
        if (tx_tvalid) assert(active_reg);
        if (tx_tvalid && tx_tlast && tx_tuser[0]) assert(left_reg == {LEN_W{1'b0}});
        assert(pkt_left_reg <= left_reg);
        if (pkt_left_reg != {LEN_W{1'b0}} && pkt_last_reg) assert(left_reg == pkt_left_reg);
        if (tx_tvalid && !tx_tlast) assert(pkt_left_reg != {LEN_W{1'b0}});
        if (tx_tvalid && !tx_tlast) assert(tx_tuser[0] == pkt_last_reg);
    end
end
`endif

endmodule

`resetall
