// NIC data path of one node (one NI): the local buffer, the packetiser (transmit) and the
// depacketiser with the reduction adder (receive).
//
//   scheduler send request --> nic_packetiser --> tx AXI-Stream (packets)
//   rx AXI-Stream (packets) --> nic_depacketiser (+ nic_reduce_add) --> receive events
//                      both read/write the local buffer (BUF_WORDS words of LANES elements)
//   host port: writes and reads buffer words (to load the node's vector, read the result)
//
// The buffer holds the node's vector: element e in word e / LANES, lane e % LANES. Flow
// f's chunk of a vector split into equal chunks of len elements is words
// [f*len/LANES, (f+1)*len/LANES), so len must be a multiple of LANES and the vector
// (flows x len elements) must fit in the buffer. A REDUCE that arrives is summed into the
// chunk; a GATHER overwrites it (the final value); a send reads it. The buffer is a
// register array with three asynchronous read ports (transmit, receive, host) and one
// write port (the receive side; the host writes only in cycles with no receive write:
// load and read it while nothing is running). Widths as nic_packetiser.v; FMT and LANES as
// nic_reduce_add.v.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_datapath #(
    parameter LANES = 2,
    parameter FMT = 1,
    parameter BUF_WORDS = 64,
    parameter FLOW_W = 8,
    parameter NODE_W = 8,
    parameter STEP_W = 8,
    parameter LEN_W = 24,
    // the reduction adder's pipeline registers (0..2; nic_depacketiser.v: receive timing)
    parameter ADD_LAT = 0,
    // derived: buffer word address bits; do not override
    parameter BA_W = $clog2(BUF_WORDS)
) (
    input  wire                          clk,
    input  wire                          rst,
    input  wire [NODE_W-1:0]             node_id,
    input  wire [LEN_W-1:0]              cfg_pkt_beats,

    // send requests from the scheduler, and its NI completion
    input  wire                          send_valid,
    output wire                          send_ready,
    input  wire                          send_op,
    input  wire [FLOW_W-1:0]             send_flow,
    input  wire [NODE_W-1:0]             send_peer,
    input  wire [LEN_W-1:0]              send_len,
    input  wire [STEP_W-1:0]             send_step,
    output wire                          ni_done,

    // receive events to the scheduler
    output wire                          recv_valid,
    output wire [FLOW_W-1:0]             recv_flow,
    output wire                          recv_op,
    output wire [NODE_W-1:0]             recv_src,
    output wire                          rx_err,
    output wire                          req_err,

    // transmit packets
    output wire                          tx_tvalid,
    input  wire                          tx_tready,
    output wire [LANES*32-1:0]           tx_tdata,
    output wire                          tx_tlast,
    output wire [NODE_W-1:0]             tx_tdest,
    output wire [NODE_W-1:0]             tx_tid,
    output wire [BA_W+STEP_W+FLOW_W+1:0] tx_tuser,

    // receive packets
    input  wire                          rx_tvalid,
    output wire                          rx_tready,
    input  wire [LANES*32-1:0]           rx_tdata,
    input  wire                          rx_tlast,
    input  wire [NODE_W-1:0]             rx_tid,
    input  wire [BA_W+STEP_W+FLOW_W+1:0] rx_tuser,

    // host port: write a word; read a word (registered, result the next cycle)
    input  wire                          host_we,
    input  wire [BA_W-1:0]               host_addr,
    input  wire [LANES*32-1:0]           host_wdata,
    output reg  [LANES*32-1:0]           host_rdata
);

`ifndef SYNTHESIS
initial begin
    if (FLOW_W < 1 || FLOW_W > 16) $fatal(1, "nic_datapath: FLOW_W = %0d out of range 1..16", FLOW_W);
    if (NODE_W < 1 || NODE_W > 16) $fatal(1, "nic_datapath: NODE_W = %0d out of range 1..16", NODE_W);
    if (STEP_W < 1 || STEP_W > 16) $fatal(1, "nic_datapath: STEP_W = %0d out of range 1..16", STEP_W);
    if (LEN_W < 1 || LEN_W > 32) $fatal(1, "nic_datapath: LEN_W = %0d out of range 1..32", LEN_W);
    if (ADD_LAT < 0 || ADD_LAT > 2) $fatal(1, "nic_datapath: ADD_LAT = %0d out of range 0..2", ADD_LAT);
end
`endif

reg [LANES*32-1:0] mem [0:BUF_WORDS-1];

wire [BA_W-1:0]     tx_raddr;
wire [BA_W-1:0]     rx_raddr;
wire [BA_W-1:0]     rx_waddr;
wire                rx_we;
wire [LANES*32-1:0] rx_wdata;

always @(posedge clk) begin
    if (rx_we) begin
        mem[rx_waddr] <= rx_wdata;
    end else if (host_we) begin
        mem[host_addr] <= host_wdata;
    end
    host_rdata <= mem[host_addr];
end

nic_packetiser #(
    .LANES(LANES), .BUF_WORDS(BUF_WORDS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W), .LEN_W(LEN_W)
) u_tx (
    .clk(clk), .rst(rst), .node_id(node_id), .cfg_pkt_beats(cfg_pkt_beats),
    .send_valid(send_valid), .send_ready(send_ready), .send_op(send_op), .send_flow(send_flow),
    .send_peer(send_peer), .send_len(send_len), .send_step(send_step), .ni_done(ni_done), .req_err(req_err),
    .buf_raddr(tx_raddr), .buf_rdata(mem[tx_raddr]),
    .tx_tvalid(tx_tvalid), .tx_tready(tx_tready), .tx_tdata(tx_tdata), .tx_tlast(tx_tlast),
    .tx_tdest(tx_tdest), .tx_tid(tx_tid), .tx_tuser(tx_tuser)
);

nic_depacketiser #(
    .LANES(LANES), .FMT(FMT), .BUF_WORDS(BUF_WORDS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W),
    .ADD_LAT(ADD_LAT)
) u_rx (
    .clk(clk), .rst(rst),
    .rx_tvalid(rx_tvalid), .rx_tready(rx_tready), .rx_tdata(rx_tdata), .rx_tlast(rx_tlast),
    .rx_tid(rx_tid), .rx_tuser(rx_tuser),
    .buf_raddr(rx_raddr), .buf_rdata(mem[rx_raddr]), .buf_we(rx_we), .buf_waddr(rx_waddr), .buf_wdata(rx_wdata),
    .recv_valid(recv_valid), .recv_flow(recv_flow), .recv_op(recv_op), .recv_src(recv_src), .rx_err(rx_err)
);

endmodule

`resetall
