// NIC data path of one node with NIS NIs: the local buffer, one packetiser per NI
// (transmit) and the depacketiser with the reduction adder (receive).
//
//   scheduler send request (to NI send_ni) --> nic_packetiser x NIS --> tx AXI-Stream x NIS
//   rx AXI-Stream x NIS --> packet arbiter --> nic_depacketiser (+ nic_reduce_add) --> receive events
//                      both read/write the local buffer (BUF_WORDS words of LANES elements)
//   host port: writes and reads buffer words (to load the node's vector, read the result)
//
// NI q owns transmit stream q and receive stream q (stream q's fields at q*W +: W). A send
// request goes to the packetiser send_ni names (send_ready is that packetiser's; ni_done
// has one bit per NI). The receive streams share one apply port: with NIS > 1 an arbiter
// grants one stream for a whole packet (round robin, a registered grant: a stream's tready
// is low while another holds the grant; switching to a stream that was not waiting when
// the previous packet ended costs one cycle). Every receive event is reported on the
// scheduler's receive port 0. With NIS = 1 stream 0 is wired straight to the depacketiser
// (send_ni is ignored).
//
// The buffer holds the node's vector: element e in word e / LANES, lane e % LANES. Flow
// f's chunk of a vector split into equal chunks of len elements is words
// [f*len/LANES, (f+1)*len/LANES), so len must be a multiple of LANES and the vector
// (flows x len elements) must fit in the buffer. A REDUCE that arrives is summed into the
// chunk; a GATHER overwrites it (the final value); a send reads it. The buffer is a
// register array with NIS + 2 asynchronous read ports (transmit x NIS, receive, host) and one
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
    // the reduction adder's pipeline registers (0..7; nic_depacketiser.v: receive timing)
    parameter ADD_LAT = 0,
    // NIs: transmit and receive streams (1..16)
    parameter NIS = 1,
    // derived: buffer word address bits, NI index bits; do not override
    parameter BA_W = $clog2(BUF_WORDS),
    parameter NI_W = (NIS > 1) ? $clog2(NIS) : 1
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
    input  wire [NI_W-1:0]               send_ni,
    output wire [NIS-1:0]                ni_done,

    // receive events to the scheduler
    output wire                          recv_valid,
    output wire [FLOW_W-1:0]             recv_flow,
    output wire                          recv_op,
    output wire [NODE_W-1:0]             recv_src,
    output wire                          rx_err,
    output wire                          req_err,

    // transmit packets, one stream per NI
    output wire [NIS-1:0]                    tx_tvalid,
    input  wire [NIS-1:0]                    tx_tready,
    output wire [NIS*LANES*32-1:0]           tx_tdata,
    output wire [NIS-1:0]                    tx_tlast,
    output wire [NIS*NODE_W-1:0]             tx_tdest,
    output wire [NIS*NODE_W-1:0]             tx_tid,
    output wire [NIS*(BA_W+STEP_W+FLOW_W+2)-1:0] tx_tuser,

    // receive packets, one stream per NI
    input  wire [NIS-1:0]                    rx_tvalid,
    output wire [NIS-1:0]                    rx_tready,
    input  wire [NIS*LANES*32-1:0]           rx_tdata,
    input  wire [NIS-1:0]                    rx_tlast,
    input  wire [NIS*NODE_W-1:0]             rx_tid,
    input  wire [NIS*(BA_W+STEP_W+FLOW_W+2)-1:0] rx_tuser,

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
    if (ADD_LAT < 0 || ADD_LAT > 7) $fatal(1, "nic_datapath: ADD_LAT = %0d out of range 0..7", ADD_LAT);
    if (NIS < 1 || NIS > 16) $fatal(1, "nic_datapath: NIS = %0d out of range 1..16", NIS);
    if (NI_W != ((NIS > 1) ? $clog2(NIS) : 1)) $fatal(1, "nic_datapath: NI_W is derived; do not override");
end
`endif

localparam DW = LANES * 32;
localparam TU_W = BA_W + STEP_W + FLOW_W + 2;

reg [DW-1:0] mem [0:BUF_WORDS-1];

wire [NIS*BA_W-1:0] tx_raddr;
wire [BA_W-1:0]     rx_raddr;
wire [BA_W-1:0]     rx_waddr;
wire                rx_we;
wire [DW-1:0]       rx_wdata;

always @(posedge clk) begin
    if (rx_we) begin
        mem[rx_waddr] <= rx_wdata;
    end else if (host_we) begin
        mem[host_addr] <= host_wdata;
    end
    host_rdata <= mem[host_addr];
end

// ---- transmit: one packetiser per NI; the request goes to NI send_ni
wire [NI_W-1:0] ni_sel = (NIS > 1) ? send_ni : {NI_W{1'b0}};
wire [NIS-1:0]  tx_send_ready;
wire [NIS-1:0]  tx_req_err;
assign send_ready = tx_send_ready[ni_sel];
assign req_err = |tx_req_err;

genvar q;
generate
    for (q = 0; q < NIS; q = q + 1) begin : g_tx
        nic_packetiser #(
            .LANES(LANES), .BUF_WORDS(BUF_WORDS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W), .LEN_W(LEN_W)
        ) u_tx (
            .clk(clk), .rst(rst), .node_id(node_id), .cfg_pkt_beats(cfg_pkt_beats),
            .send_valid(send_valid && ni_sel == q), .send_ready(tx_send_ready[q]), .send_op(send_op),
            .send_flow(send_flow), .send_peer(send_peer), .send_len(send_len), .send_step(send_step),
            .ni_done(ni_done[q]), .req_err(tx_req_err[q]),
            .buf_raddr(tx_raddr[q*BA_W +: BA_W]), .buf_rdata(mem[tx_raddr[q*BA_W +: BA_W]]),
            .tx_tvalid(tx_tvalid[q]), .tx_tready(tx_tready[q]), .tx_tdata(tx_tdata[q*DW +: DW]),
            .tx_tlast(tx_tlast[q]), .tx_tdest(tx_tdest[q*NODE_W +: NODE_W]), .tx_tid(tx_tid[q*NODE_W +: NODE_W]),
            .tx_tuser(tx_tuser[q*TU_W +: TU_W])
        );
    end
endgenerate

// ---- receive: the streams share the depacketiser (a packet-level arbiter when NIS > 1)
wire              m_tvalid;
wire              m_tready;
wire [DW-1:0]     m_tdata;
wire              m_tlast;
wire [NODE_W-1:0] m_tid;
wire [TU_W-1:0]   m_tuser;

generate
    if (NIS == 1) begin : g_rx_one
        assign m_tvalid = rx_tvalid;
        assign rx_tready = m_tready;
        assign m_tdata = rx_tdata;
        assign m_tlast = rx_tlast;
        assign m_tid = rx_tid;
        assign m_tuser = rx_tuser;
    end else begin : g_rx_arb
        // rx_lock: stream rx_sel holds the apply port until its packet's last beat is taken
        reg            rx_lock;
        reg [NI_W-1:0] rx_sel;
        wire take_last = rx_lock && rx_tvalid[rx_sel] && m_tready && rx_tlast[rx_sel];
        // the next grant: the first waiting stream after rx_sel in round-robin order (rx_sel
        // itself last, and not at all in the cycle its last beat is taken)
        reg [NI_W-1:0] pick;
        reg            pick_any;
        integer k;
        /* verilator lint_off UNUSEDSIGNAL */
        reg [31:0] idx;  // a stream index (its low NI_W bits)
        /* verilator lint_on UNUSEDSIGNAL */
        always @* begin
            pick = rx_sel;
            pick_any = 1'b0;
            for (k = NIS; k >= 1; k = k - 1) begin
                idx = ({{(32-NI_W){1'b0}}, rx_sel} + k) % NIS;
                if (rx_tvalid[idx[NI_W-1:0]] && !(k == NIS && take_last)) begin
                    pick = idx[NI_W-1:0];
                    pick_any = 1'b1;
                end
            end
        end
        always @(posedge clk) begin
            if (rst) begin
                rx_lock <= 1'b0;
                rx_sel <= {NI_W{1'b0}};
            end else if (!rx_lock || take_last) begin
                rx_lock <= pick_any;
                rx_sel <= pick;
            end
        end
        assign m_tvalid = rx_lock && rx_tvalid[rx_sel];
        assign m_tdata = rx_tdata[rx_sel*DW +: DW];
        assign m_tlast = rx_tlast[rx_sel];
        assign m_tid = rx_tid[rx_sel*NODE_W +: NODE_W];
        assign m_tuser = rx_tuser[rx_sel*TU_W +: TU_W];
        for (q = 0; q < NIS; q = q + 1) begin : g_ready
            assign rx_tready[q] = rx_lock && rx_sel == q && m_tready;
        end
`ifdef FORMAL
        // the arbiter's rules (tests/rtl/formal/props_rx_arb.v proves them): only the granted
        // stream is ready, and a packet keeps the grant from its first beat to its last
        reg            f_in_pkt = 1'b0;  // a beat of a packet taken, its last beat not yet
        reg [NI_W-1:0] f_pkt_sel = {NI_W{1'b0}};
        always @(posedge clk) begin
            if (rst) begin
                f_in_pkt <= 1'b0;
            end else if (m_tvalid && m_tready) begin
                f_in_pkt <= !m_tlast;
                f_pkt_sel <= rx_sel;
            end
        end
        integer f_q;
        always @* begin
            if (!rst) begin
                assert(!f_in_pkt || (rx_lock && rx_sel == f_pkt_sel));
                for (f_q = 0; f_q < NIS; f_q = f_q + 1) begin
                    if (rx_tready[f_q]) assert(rx_lock && rx_sel == f_q);
                end
            end
        end
`endif
    end
endgenerate

nic_depacketiser #(
    .LANES(LANES), .FMT(FMT), .BUF_WORDS(BUF_WORDS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W),
    .ADD_LAT(ADD_LAT)
) u_rx (
    .clk(clk), .rst(rst),
    .rx_tvalid(m_tvalid), .rx_tready(m_tready), .rx_tdata(m_tdata), .rx_tlast(m_tlast),
    .rx_tid(m_tid), .rx_tuser(m_tuser),
    .buf_raddr(rx_raddr), .buf_rdata(mem[rx_raddr]), .buf_we(rx_we), .buf_waddr(rx_waddr), .buf_wdata(rx_wdata),
    .recv_valid(recv_valid), .recv_flow(recv_flow), .recv_op(recv_op), .recv_src(recv_src), .rx_err(rx_err)
);

endmodule

`resetall
