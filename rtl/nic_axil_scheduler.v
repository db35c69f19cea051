// The NIC scheduler programmed over AXI4-Lite: nic_regs (the register map, docs/rtl.md)
// in front of nic_scheduler. The scheduler's send request (AXI-Stream source), receive
// ports and ni_done pass through unchanged; its table load, read port, start/clear,
// timeout, status and error events are driven by and read through the register map.
// `irq` is the register map's interrupt line.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_axil_scheduler #(
    // the scheduler's parameters (docs/nic_scheduler.md, "Parameters")
    parameter DEPTH = 64,
    parameter NIS = 1,
    parameter FLOW_W = 8,
    parameter NODE_W = 8,
    parameter STEP_W = 8,
    parameter LEN_W = 24,
    parameter CNT_W = 4,
    parameter ERR_W = 16,
    parameter TMO_W = 16,
    parameter SCHED_PIPE = 0,
    // AXI-Lite byte address bits (7..16)
    parameter AXIL_ADDR_W = 8,
    // derived; do not override
    parameter ADDR_W = (DEPTH > 1) ? $clog2(DEPTH) : 1,
    parameter NI_W = (NIS > 1) ? $clog2(NIS) : 1
) (
    input  wire                   clk,
    input  wire                   rst,

    // AXI4-Lite slave: the register map
    input  wire [AXIL_ADDR_W-1:0] s_axil_awaddr,
    input  wire [2:0]             s_axil_awprot,
    input  wire                   s_axil_awvalid,
    output wire                   s_axil_awready,
    input  wire [31:0]            s_axil_wdata,
    input  wire [3:0]             s_axil_wstrb,
    input  wire                   s_axil_wvalid,
    output wire                   s_axil_wready,
    output wire [1:0]             s_axil_bresp,
    output wire                   s_axil_bvalid,
    input  wire                   s_axil_bready,
    input  wire [AXIL_ADDR_W-1:0] s_axil_araddr,
    input  wire [2:0]             s_axil_arprot,
    input  wire                   s_axil_arvalid,
    output wire                   s_axil_arready,
    output wire [31:0]            s_axil_rdata,
    output wire [1:0]             s_axil_rresp,
    output wire                   s_axil_rvalid,
    input  wire                   s_axil_rready,

    // receive ports and NI completions (as nic_scheduler)
    input  wire [NIS-1:0]         recv_valid,
    input  wire [NIS*FLOW_W-1:0]  recv_flow,
    input  wire [NIS-1:0]         recv_op,
    input  wire [NIS*NODE_W-1:0]  recv_src,
    input  wire [NIS-1:0]         ni_done,

    // send requests (as nic_scheduler)
    input  wire                   send_ready,
    output wire                   send_valid,
    output wire [ADDR_W-1:0]      send_entry,
    output wire                   send_op,
    output wire [FLOW_W-1:0]      send_flow,
    output wire [NODE_W-1:0]      send_peer,
    output wire [LEN_W-1:0]       send_len,
    output wire [STEP_W-1:0]      send_step,
    output wire [NI_W-1:0]        send_ni,

    // status for the data path
    output wire [STEP_W-1:0]      step,
    output wire [NIS-1:0]         ni_busy,
    output wire                   running,
    output wire                   done,

    output wire                   irq
);

// the scheduler's parameters are checked by nic_scheduler, AXIL_ADDR_W by nic_regs
`ifndef SYNTHESIS
initial begin
    if (AXIL_ADDR_W < 7 || AXIL_ADDR_W > 16)
        $fatal(1, "nic_axil_scheduler: AXIL_ADDR_W = %0d out of range 7..16", AXIL_ADDR_W);
    if (ADDR_W != ((DEPTH > 1) ? $clog2(DEPTH) : 1)) $fatal(1, "nic_axil_scheduler: ADDR_W is derived; do not override");
    if (NI_W != ((NIS > 1) ? $clog2(NIS) : 1)) $fatal(1, "nic_axil_scheduler: NI_W is derived; do not override");
end
`endif

wire               start;
wire               clear;
wire               load_valid;
wire [ADDR_W-1:0]  load_addr;
wire [1:0]         load_op;
wire [FLOW_W-1:0]  load_flow;
wire [NODE_W-1:0]  load_peer;
wire [STEP_W-1:0]  load_step;
wire [LEN_W-1:0]   load_len;
wire               load_dep_op;
wire [CNT_W-1:0]   load_dep_count;
wire [NODE_W-1:0]  load_src;
wire               load_src_chk;
wire               rd_en;
wire [ADDR_W-1:0]  rd_addr;
wire [TMO_W-1:0]   timeout_cycles;
wire               err;
wire [ERR_W-1:0]   err_count;
wire [NODE_W-1:0]  err_src;
wire [FLOW_W-1:0]  err_flow;
wire               ev_unexp;
wire               ev_wrong_src;
wire               ev_timeout;
wire               rd_valid_unused;
wire               rd_entry_valid;
wire               rd_issued;
wire [1:0]         rd_op;
wire [FLOW_W-1:0]  rd_flow;
wire [NODE_W-1:0]  rd_peer;
wire [STEP_W-1:0]  rd_step;
wire [LEN_W-1:0]   rd_len;
wire               rd_dep_op;
wire [CNT_W-1:0]   rd_dep_count;
wire [CNT_W-1:0]   rd_count;
wire [NODE_W-1:0]  rd_src;
wire               rd_src_chk;

nic_regs #(
    .DEPTH(DEPTH), .NIS(NIS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W), .LEN_W(LEN_W),
    .CNT_W(CNT_W), .ERR_W(ERR_W), .TMO_W(TMO_W), .AXIL_ADDR_W(AXIL_ADDR_W)
) u_regs (
    .clk(clk), .rst(rst),
    .s_axil_awaddr(s_axil_awaddr), .s_axil_awprot(s_axil_awprot), .s_axil_awvalid(s_axil_awvalid),
    .s_axil_awready(s_axil_awready), .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid), .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp),
    .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready), .s_axil_araddr(s_axil_araddr),
    .s_axil_arprot(s_axil_arprot), .s_axil_arvalid(s_axil_arvalid), .s_axil_arready(s_axil_arready),
    .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp), .s_axil_rvalid(s_axil_rvalid),
    .s_axil_rready(s_axil_rready),
    .sched_start(start), .sched_clear(clear),
    .load_valid(load_valid), .load_addr(load_addr), .load_op(load_op), .load_flow(load_flow),
    .load_peer(load_peer), .load_step(load_step), .load_len(load_len), .load_dep_op(load_dep_op),
    .load_dep_count(load_dep_count), .load_src(load_src), .load_src_chk(load_src_chk),
    .rd_en(rd_en), .rd_addr(rd_addr), .timeout_cycles(timeout_cycles),
    .running(running), .done(done), .err(err), .send_valid(send_valid), .step(step), .ni_busy(ni_busy),
    .err_count(err_count), .err_src(err_src), .err_flow(err_flow),
    .ev_unexp(ev_unexp), .ev_wrong_src(ev_wrong_src), .ev_timeout(ev_timeout),
    .rd_entry_valid(rd_entry_valid), .rd_issued(rd_issued), .rd_op(rd_op), .rd_flow(rd_flow),
    .rd_peer(rd_peer), .rd_step(rd_step), .rd_len(rd_len), .rd_dep_op(rd_dep_op),
    .rd_dep_count(rd_dep_count), .rd_count(rd_count), .rd_src(rd_src), .rd_src_chk(rd_src_chk),
    .irq(irq)
);

nic_scheduler #(
    .DEPTH(DEPTH), .NIS(NIS), .FLOW_W(FLOW_W), .NODE_W(NODE_W), .STEP_W(STEP_W), .LEN_W(LEN_W),
    .CNT_W(CNT_W), .ERR_W(ERR_W), .TMO_W(TMO_W), .SCHED_PIPE(SCHED_PIPE)
) u_sched (
    .clk(clk), .rst(rst), .clear(clear),
    .load_valid(load_valid), .load_addr(load_addr), .load_op(load_op), .load_flow(load_flow),
    .load_peer(load_peer), .load_step(load_step), .load_len(load_len), .load_dep_op(load_dep_op),
    .load_dep_count(load_dep_count), .load_src(load_src), .load_src_chk(load_src_chk),
    .rd_en(rd_en), .rd_addr(rd_addr), .start(start), .timeout_cycles(timeout_cycles),
    .recv_valid(recv_valid), .recv_flow(recv_flow), .recv_op(recv_op), .recv_src(recv_src),
    .send_ready(send_ready), .ni_done(ni_done),
    .send_valid(send_valid), .send_entry(send_entry), .send_op(send_op), .send_flow(send_flow),
    .send_peer(send_peer), .send_len(send_len), .send_step(send_step), .send_ni(send_ni),
    .step(step), .ni_busy(ni_busy), .running(running), .done(done),
    .err(err), .err_count(err_count), .err_src(err_src), .err_flow(err_flow),
    .ev_unexp(ev_unexp), .ev_wrong_src(ev_wrong_src), .ev_timeout(ev_timeout),
    .rd_valid(rd_valid_unused), .rd_entry_valid(rd_entry_valid), .rd_issued(rd_issued), .rd_op(rd_op),
    .rd_flow(rd_flow), .rd_peer(rd_peer), .rd_step(rd_step), .rd_len(rd_len), .rd_dep_op(rd_dep_op),
    .rd_dep_count(rd_dep_count), .rd_count(rd_count), .rd_src(rd_src), .rd_src_chk(rd_src_chk)
);

endmodule

`resetall
