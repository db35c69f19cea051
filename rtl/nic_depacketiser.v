// Depacketiser and reduction: takes packets off the receive AXI-Stream (the packet
// format of nic_packetiser.v) and applies each beat to the local buffer word it names:
// a REDUCE beat is added to the word (nic_reduce_add: LANES lanes, FMT int32 or fp32),
// a GATHER beat overwrites it. When the beat that ends a message's last packet has been
// written, recv_valid pulses for one cycle with the message's flow, op and source (the
// scheduler's receive event: for a REDUCE, the data has been summed).
//
// Timing: a beat taken at edge k is in the apply register during cycle k+1 and written at
// edge k+1 (read-modify-write within that cycle, so the next beat, even of the same word,
// reads the written value); its receive event is presented during cycle k+2. The stream
// is always ready (one beat per cycle), except during reset.
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

    // local buffer: asynchronous read of the word being applied, and its write
    output wire [BA_W-1:0]               buf_addr,
    input  wire [LANES*32-1:0]           buf_rdata,
    output wire                          buf_we,
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

assign rx_tready = !rst;
wire beat = rx_tvalid && rx_tready;

nic_reduce_add #(.LANES(LANES), .FMT(FMT)) u_add (.a(buf_rdata), .b(p_data), .y(sum));

assign buf_addr = p_addr;
assign buf_we = p_valid;
assign buf_wdata = p_op ? p_data : sum;

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
        p_valid <= beat;
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
        recv_valid <= p_valid && p_ev;
        if (p_valid && p_ev) begin
            recv_flow <= p_flow;
            recv_op <= p_op;
            recv_src <= p_src;
        end
    end
end

endmodule

`resetall
