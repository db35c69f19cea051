// One node's NIC with NIS NIs: the schedule-table scheduler (nic_scheduler) and the data
// path (nic_datapath) wired together.
//
//   scheduler send request (NI send_ni) --> that NI's packetiser --> its tx packets;
//                                           last beat taken --> that NI's ni_done
//   rx packets (NIS streams) --> depacketiser/reduction --> buffer; message applied -->
//                                           recv event (on the scheduler's receive port 0)
//
// NI q's streams are the fields q*W +: W of the tx_* and rx_* vectors (nic_datapath.v).
//
// The table load port, start/clear, status and read port are the scheduler's own
// (docs/nic_scheduler.md); the streams, the host buffer port and the error flags are the
// data path's (docs/rtl.md, "Data path"). Parameters as in those modules.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_top #(
    parameter DEPTH = 64,
    parameter LANES = 2,
    parameter FMT = 1,
    parameter BUF_WORDS = 64,
    parameter FLOW_W = 8,
    parameter NODE_W = 8,
    parameter STEP_W = 8,
    parameter LEN_W = 24,
    parameter CNT_W = 4,
    parameter ERR_W = 16,
    parameter TMO_W = 16,
    // the reduction adder's pipeline registers (0..7; receive timing in nic_depacketiser.v)
    parameter ADD_LAT = 0,
    // NIs: sends in flight, transmit and receive streams (1..16)
    parameter NIS = 1,
    // the scheduler's pipeline registers (0..1; nic_scheduler.v)
    parameter SCHED_PIPE = 0,
    // derived; do not override
    parameter ADDR_W = (DEPTH > 1) ? $clog2(DEPTH) : 1,
    parameter BA_W = $clog2(BUF_WORDS),
    parameter NI_W = (NIS > 1) ? $clog2(NIS) : 1
) (
    input  wire                          clk,
    input  wire                          rst,
    input  wire                          clear,
    input  wire [NODE_W-1:0]             node_id,
    input  wire [LEN_W-1:0]              cfg_pkt_beats,

    // schedule table load and run control (nic_scheduler)
    input  wire                          load_valid,
    input  wire [ADDR_W-1:0]             load_addr,
    input  wire [1:0]                    load_op,
    input  wire [FLOW_W-1:0]             load_flow,
    input  wire [NODE_W-1:0]             load_peer,
    input  wire [STEP_W-1:0]             load_step,
    input  wire [LEN_W-1:0]              load_len,
    input  wire                          load_dep_op,
    input  wire [CNT_W-1:0]              load_dep_count,
    input  wire [NODE_W-1:0]             load_src,       // expected source (docs/nic_scheduler.md)
    input  wire                          load_src_chk,
    input  wire                          start,
    input  wire [TMO_W-1:0]              timeout_cycles, // 0: no timeout
    input  wire                          rd_en,
    input  wire [ADDR_W-1:0]             rd_addr,

    // status
    output wire [STEP_W-1:0]             step,
    output wire                          running,
    output wire                          done,
    output wire                          err,
    output wire [ERR_W-1:0]              err_count,
    output wire [NODE_W-1:0]             err_src,
    output wire [FLOW_W-1:0]             err_flow,
    output wire                          ev_unexp,
    output wire                          ev_wrong_src,
    output wire                          ev_timeout,
    output wire                          rx_err,
    output wire                          req_err,
    output wire [NIS-1:0]                ni_busy,
    output wire                          sched_send_valid,
    output wire [ADDR_W-1:0]             sched_send_entry,
    output wire [NI_W-1:0]               sched_send_ni,

    // table read port (nic_scheduler)
    output wire                          rd_valid,
    output wire                          rd_entry_valid,
    output wire                          rd_issued,
    output wire [1:0]                    rd_op,
    output wire [FLOW_W-1:0]             rd_flow,
    output wire [NODE_W-1:0]             rd_peer,
    output wire [STEP_W-1:0]             rd_step,
    output wire [LEN_W-1:0]              rd_len,
    output wire                          rd_dep_op,
    output wire [CNT_W-1:0]              rd_dep_count,
    output wire [CNT_W-1:0]              rd_count,
    output wire [NODE_W-1:0]             rd_src,
    output wire                          rd_src_chk,

    // packets, one transmit and one receive stream per NI
    output wire [NIS-1:0]                tx_tvalid,
    input  wire [NIS-1:0]                tx_tready,
    output wire [NIS*LANES*32-1:0]       tx_tdata,
    output wire [NIS-1:0]                tx_tlast,
    output wire [NIS*NODE_W-1:0]         tx_tdest,
    output wire [NIS*NODE_W-1:0]         tx_tid,
    output wire [NIS*(BA_W+STEP_W+FLOW_W+2)-1:0] tx_tuser,
    input  wire [NIS-1:0]                rx_tvalid,
    output wire [NIS-1:0]                rx_tready,
    input  wire [NIS*LANES*32-1:0]       rx_tdata,
    input  wire [NIS-1:0]                rx_tlast,
    input  wire [NIS*NODE_W-1:0]         rx_tid,
    input  wire [NIS*(BA_W+STEP_W+FLOW_W+2)-1:0] rx_tuser,

    // host buffer port
    input  wire                          host_we,
    input  wire [BA_W-1:0]               host_addr,
    input  wire [LANES*32-1:0]           host_wdata,
    output wire [LANES*32-1:0]           host_rdata
);

// the field widths are checked again by nic_scheduler and nic_datapath
`ifndef SYNTHESIS
initial begin
    if (DEPTH < 1 || DEPTH > 4096) $fatal(1, "nic_top: DEPTH = %0d out of range 1..4096", DEPTH);
    if (LANES != 1 && LANES != 2 && LANES != 4 && LANES != 8 && LANES != 16)
        $fatal(1, "nic_top: LANES = %0d must be 1, 2, 4, 8 or 16", LANES);
    if (FMT != 0 && FMT != 1) $fatal(1, "nic_top: FMT = %0d must be 0 (int32) or 1 (fp32)", FMT);
    if (BUF_WORDS < 2 || BUF_WORDS > 65536) $fatal(1, "nic_top: BUF_WORDS = %0d out of range 2..65536", BUF_WORDS);
    if (ADDR_W != ((DEPTH > 1) ? $clog2(DEPTH) : 1)) $fatal(1, "nic_top: ADDR_W is derived; do not override");
    if (BA_W != $clog2(BUF_WORDS)) $fatal(1, "nic_top: BA_W is derived; do not override");
    if (ADD_LAT < 0 || ADD_LAT > 7) $fatal(1, "nic_top: ADD_LAT = %0d out of range 0..7", ADD_LAT);
    if (NIS < 1 || NIS > 16) $fatal(1, "nic_top: NIS = %0d out of range 1..16", NIS);
    if (SCHED_PIPE < 0 || SCHED_PIPE > 1) $fatal(1, "nic_top: SCHED_PIPE = %0d out of range 0..1", SCHED_PIPE);
    if (NI_W != ((NIS > 1) ? $clog2(NIS) : 1)) $fatal(1, "nic_top: NI_W is derived; do not override");
end
`endif

wire              s_valid;
wire              s_ready;
wire              s_op;
wire [FLOW_W-1:0] s_flow;
wire [NODE_W-1:0] s_peer;
wire [LEN_W-1:0]  s_len;
wire [STEP_W-1:0] s_step;
wire [NI_W-1:0]   s_ni;
wire [NIS-1:0]    ni_done;
wire              r_valid;
wire [FLOW_W-1:0] r_flow;
wire              r_op;
wire [NODE_W-1:0] r_src;

// receive events on port 0; the other ports stay idle (their fields are don't-care)
reg  [NIS-1:0]        rv_port;
always @* begin
    rv_port = {NIS{1'b0}};
    rv_port[0] = r_valid;
end
wire [NIS-1:0]        ro_port = {NIS{r_op}};
wire [NIS*FLOW_W-1:0] rf_port = {NIS{r_flow}};
wire [NIS*NODE_W-1:0] rs_port = {NIS{r_src}};

nic_scheduler #(
    .DEPTH(DEPTH), .NIS(NIS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W), .LEN_W(LEN_W),
    .CNT_W(CNT_W), .ERR_W(ERR_W), .TMO_W(TMO_W), .SCHED_PIPE(SCHED_PIPE)
) u_sched (
    .clk(clk), .rst(rst), .clear(clear),
    .load_valid(load_valid), .load_addr(load_addr), .load_op(load_op), .load_flow(load_flow),
    .load_peer(load_peer), .load_step(load_step), .load_len(load_len), .load_dep_op(load_dep_op),
    .load_dep_count(load_dep_count), .load_src(load_src), .load_src_chk(load_src_chk),
    .rd_en(rd_en), .rd_addr(rd_addr), .start(start), .timeout_cycles(timeout_cycles),
    .recv_valid(rv_port), .recv_flow(rf_port), .recv_op(ro_port), .recv_src(rs_port),
    .send_ready(s_ready), .ni_done(ni_done),
    .send_valid(s_valid), .send_entry(sched_send_entry), .send_op(s_op), .send_flow(s_flow),
    .send_peer(s_peer), .send_len(s_len), .send_step(s_step), .send_ni(s_ni),
    .step(step), .ni_busy(ni_busy), .running(running), .done(done), .err(err), .err_count(err_count),
    .err_src(err_src), .err_flow(err_flow), .ev_unexp(ev_unexp), .ev_wrong_src(ev_wrong_src),
    .ev_timeout(ev_timeout),
    .rd_valid(rd_valid), .rd_entry_valid(rd_entry_valid), .rd_issued(rd_issued), .rd_op(rd_op),
    .rd_flow(rd_flow), .rd_peer(rd_peer), .rd_step(rd_step), .rd_len(rd_len), .rd_dep_op(rd_dep_op),
    .rd_dep_count(rd_dep_count), .rd_count(rd_count),
    .rd_src(rd_src), .rd_src_chk(rd_src_chk)
);

assign sched_send_valid = s_valid;
assign sched_send_ni = s_ni;

nic_datapath #(
    .LANES(LANES), .FMT(FMT), .BUF_WORDS(BUF_WORDS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W),
    .LEN_W(LEN_W), .ADD_LAT(ADD_LAT), .NIS(NIS)
) u_dp (
    .clk(clk), .rst(rst || clear), .node_id(node_id), .cfg_pkt_beats(cfg_pkt_beats),
    .send_valid(s_valid), .send_ready(s_ready), .send_op(s_op), .send_flow(s_flow), .send_peer(s_peer),
    .send_len(s_len), .send_step(s_step), .send_ni(s_ni), .ni_done(ni_done),
    .recv_valid(r_valid), .recv_flow(r_flow), .recv_op(r_op), .recv_src(r_src), .rx_err(rx_err),
    .req_err(req_err),
    .tx_tvalid(tx_tvalid), .tx_tready(tx_tready), .tx_tdata(tx_tdata), .tx_tlast(tx_tlast),
    .tx_tdest(tx_tdest), .tx_tid(tx_tid), .tx_tuser(tx_tuser),
    .rx_tvalid(rx_tvalid), .rx_tready(rx_tready), .rx_tdata(rx_tdata), .rx_tlast(rx_tlast),
    .rx_tid(rx_tid), .rx_tuser(rx_tuser),
    .host_we(host_we), .host_addr(host_addr), .host_wdata(host_wdata), .host_rdata(host_rdata)
);

endmodule

`resetall
