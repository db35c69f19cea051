// AXI4-Lite register map of the NIC scheduler (docs/rtl.md, "AXI-Lite register map"; the
// map itself is described once in hw_models/rtl/regmap.py, which the docs table and the
// benches use and a test checks the offsets below against).
//
// AXI4-Lite slave, 32-bit data: AW and W are taken in any order (each has a holding
// register; the write happens once both are held and the B channel is free), B and R are
// held until the master takes them (bready/rready), so backpressure on any channel is
// respected. One write and one read may be in progress at once. An address outside the
// map answers SLVERR (a read returns 0, a write changes nothing). WSTRB selects the
// bytes a write affects, also for W1C and command bits.
//
// Towards nic_scheduler: start/clear and the table load are one-cycle pulses from
// registers; load_* fields come from the staging registers ENTRY_W0..W3 and the address
// latched with the command (a staging register cannot change while its load pulse is out:
// the next write completes two cycles later at the earliest). The entry read-back is the
// scheduler's own read port (rd_* hold their value until the next read).
//
// Interrupts: IRQ_STATUS holds sticky flags set by the scheduler's error events (and by
// `done` rising), cleared by writing 1 (a flag set in the same cycle stays set) or by
// CTRL.clear; irq = OR of IRQ_STATUS & IRQ_ENABLE, a function of registers only.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_regs #(
    // the scheduler's parameters (docs/nic_scheduler.md); see nic_scheduler.v
    parameter DEPTH = 64,
    parameter NIS = 1,
    parameter FLOW_W = 8,
    parameter NODE_W = 8,
    parameter STEP_W = 8,
    parameter LEN_W = 24,
    parameter CNT_W = 4,
    parameter ERR_W = 16,
    parameter TMO_W = 16,
    // derived: bits of a table address; do not override
    parameter ADDR_W = (DEPTH > 1) ? $clog2(DEPTH) : 1,
    // AXI-Lite address bits (byte address; the map uses 0x00..0x57): 7..16
    parameter AXIL_ADDR_W = 8
) (
    input  wire                   clk,
    input  wire                   rst,

    // AXI4-Lite slave
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

    // to the scheduler
    output wire                   sched_start,
    output wire                   sched_clear,
    output wire                   load_valid,
    output wire [ADDR_W-1:0]      load_addr,
    output wire [1:0]             load_op,
    output wire [FLOW_W-1:0]      load_flow,
    output wire [NODE_W-1:0]      load_peer,
    output wire [STEP_W-1:0]      load_step,
    output wire [LEN_W-1:0]       load_len,
    output wire                   load_dep_op,
    output wire [CNT_W-1:0]       load_dep_count,
    output wire [NODE_W-1:0]      load_src,
    output wire                   load_src_chk,
    output wire                   rd_en,
    output wire [ADDR_W-1:0]      rd_addr,
    output wire [TMO_W-1:0]       timeout_cycles,

    // from the scheduler
    input  wire                   running,
    input  wire                   done,
    input  wire                   err,
    input  wire                   send_valid,
    input  wire [STEP_W-1:0]      step,
    input  wire [NIS-1:0]         ni_busy,
    input  wire [ERR_W-1:0]       err_count,
    input  wire [NODE_W-1:0]      err_src,
    input  wire [FLOW_W-1:0]      err_flow,
    input  wire                   ev_unexp,
    input  wire                   ev_wrong_src,
    input  wire                   ev_timeout,
    input  wire                   rd_entry_valid,
    input  wire                   rd_issued,
    input  wire [1:0]             rd_op,
    input  wire [FLOW_W-1:0]      rd_flow,
    input  wire [NODE_W-1:0]      rd_peer,
    input  wire [STEP_W-1:0]      rd_step,
    input  wire [LEN_W-1:0]       rd_len,
    input  wire                   rd_dep_op,
    input  wire [CNT_W-1:0]       rd_dep_count,
    input  wire [CNT_W-1:0]       rd_count,
    input  wire [NODE_W-1:0]      rd_src,
    input  wire                   rd_src_chk,

    // interrupt (level, active high)
    output wire                   irq
);

`ifndef SYNTHESIS
initial begin
    if (AXIL_ADDR_W < 7 || AXIL_ADDR_W > 16) $fatal(1, "nic_regs: AXIL_ADDR_W = %0d out of range 7..16", AXIL_ADDR_W);
    if (ADDR_W != ((DEPTH > 1) ? $clog2(DEPTH) : 1)) $fatal(1, "nic_regs: ADDR_W is derived; do not override");
end
`endif

// ---- the map (hw_models/rtl/regmap.py) ------------------------------------------------
localparam [7:0] A_ID = 8'h00;
localparam [7:0] A_CONFIG = 8'h04;
localparam [7:0] A_CTRL = 8'h08;
localparam [7:0] A_STATUS = 8'h0C;
localparam [7:0] A_IRQ_STATUS = 8'h10;
localparam [7:0] A_IRQ_ENABLE = 8'h14;
localparam [7:0] A_TIMEOUT = 8'h18;
localparam [7:0] A_ERR_COUNT = 8'h1C;
localparam [7:0] A_ERR_INFO = 8'h20;
localparam [7:0] A_NI_BUSY = 8'h24;
localparam [7:0] A_ENTRY_ADDR = 8'h30;
localparam [7:0] A_ENTRY_W0 = 8'h34;
localparam [7:0] A_ENTRY_W1 = 8'h38;
localparam [7:0] A_ENTRY_W2 = 8'h3C;
localparam [7:0] A_ENTRY_W3 = 8'h40;
localparam [7:0] A_ENTRY_CMD = 8'h44;
localparam [7:0] A_RD_W0 = 8'h48;
localparam [7:0] A_RD_W1 = 8'h4C;
localparam [7:0] A_RD_W2 = 8'h50;
localparam [7:0] A_RD_W3 = 8'h54;
localparam [31:0] ID_VALUE = 32'h4E53_0001;
localparam integer CFG_DEPTH = DEPTH;
localparam integer CFG_NIS = NIS;
localparam NFLAGS = 4;  // done, unexpected, wrong_src, timeout
localparam [1:0] RESP_OKAY = 2'b00;
localparam [1:0] RESP_SLVERR = 2'b10;

// ---- registers -----------------------------------------------------------------------
reg [NFLAGS-1:0] flags_reg;
reg [NFLAGS-1:0] irq_en_reg;
reg [TMO_W-1:0]  timeout_reg;
reg [ADDR_W-1:0] entry_addr_reg;
reg [1:0]        e_op_reg;
reg              e_dep_op_reg;
reg              e_src_chk_reg;
reg [CNT_W-1:0]  e_dep_count_reg;
reg [STEP_W-1:0] e_step_reg;
reg [FLOW_W-1:0] e_flow_reg;
reg [NODE_W-1:0] e_peer_reg;
reg [LEN_W-1:0]  e_len_reg;
reg [NODE_W-1:0] e_src_reg;
reg              start_reg;
reg              clear_reg;
reg              load_reg;
reg              read_reg;
reg [ADDR_W-1:0] cmd_addr_reg;
reg              done_d_reg;

// ---- write channel: AW and W held independently, then written when B is free ----------
reg                   aw_full_reg;
reg [AXIL_ADDR_W-1:0] aw_addr_reg;
reg                   w_full_reg;
reg [31:0]            w_data_reg;
reg [3:0]             w_strb_reg;
reg                   bvalid_reg;
reg [1:0]             bresp_reg;

assign s_axil_awready = !aw_full_reg;
assign s_axil_wready = !w_full_reg;
assign s_axil_bvalid = bvalid_reg;
assign s_axil_bresp = bresp_reg;

wire do_write = aw_full_reg && w_full_reg && (!bvalid_reg || s_axil_bready);
wire [31:0] wmask = {{8{w_strb_reg[3]}}, {8{w_strb_reg[2]}}, {8{w_strb_reg[1]}}, {8{w_strb_reg[0]}}};
wire [3:0]  wbits = w_data_reg[3:0] & wmask[3:0];  // the bits a write sets (W1C, commands)
// the register a write addresses (word aligned; bits above the map must be zero)
wire        w_in_map = (aw_addr_reg >> 8) == {AXIL_ADDR_W{1'b0}};
wire [7:0]  w_addr = {aw_addr_reg[7:2], 2'b00};
wire        w_hit = w_in_map && (w_addr == A_ID || w_addr == A_CONFIG || w_addr == A_CTRL || w_addr == A_STATUS
    || w_addr == A_IRQ_STATUS || w_addr == A_IRQ_ENABLE || w_addr == A_TIMEOUT || w_addr == A_ERR_COUNT
    || w_addr == A_ERR_INFO || w_addr == A_NI_BUSY || w_addr == A_ENTRY_ADDR || w_addr == A_ENTRY_W0
    || w_addr == A_ENTRY_W1 || w_addr == A_ENTRY_W2 || w_addr == A_ENTRY_W3 || w_addr == A_ENTRY_CMD
    || w_addr == A_RD_W0 || w_addr == A_RD_W1 || w_addr == A_RD_W2 || w_addr == A_RD_W3);
wire        wr = do_write && w_hit;

// the addressed RW register as it reads now; a write changes its strobed bytes only
reg [31:0] w_old;

// The read-write registers as their 32-bit words (read back, and merged with a write's
// byte strobes)
reg [31:0] word_irq_en, word_timeout, word_entry_addr, word_w0, word_w1, word_w2, word_w3;
always @* begin : rw_words
    word_irq_en = 32'd0;
    word_irq_en[NFLAGS-1:0] = irq_en_reg;
    word_timeout = 32'd0;
    word_timeout[TMO_W-1:0] = timeout_reg;
    word_entry_addr = 32'd0;
    word_entry_addr[ADDR_W-1:0] = entry_addr_reg;
    word_w0 = 32'd0;
    word_w0[1:0] = e_op_reg;
    word_w0[2] = e_dep_op_reg;
    word_w0[3] = e_src_chk_reg;
    word_w0[4 +: CNT_W] = e_dep_count_reg;
    word_w0[12 +: STEP_W] = e_step_reg;
    word_w1 = 32'd0;
    word_w1[FLOW_W-1:0] = e_flow_reg;
    word_w1[16 +: NODE_W] = e_peer_reg;
    word_w2 = 32'd0;
    word_w2[LEN_W-1:0] = e_len_reg;
    word_w3 = 32'd0;
    word_w3[NODE_W-1:0] = e_src_reg;
end

always @* begin : write_old
    case (w_addr)
        A_IRQ_ENABLE: w_old = word_irq_en;
        A_TIMEOUT: w_old = word_timeout;
        A_ENTRY_ADDR: w_old = word_entry_addr;
        A_ENTRY_W0: w_old = word_w0;
        A_ENTRY_W1: w_old = word_w1;
        A_ENTRY_W2: w_old = word_w2;
        A_ENTRY_W3: w_old = word_w3;
        default: w_old = 32'd0;
    endcase
end

// (which bits of it a register stores depends on the field widths)
/* verilator lint_off UNUSEDSIGNAL */
wire [31:0] w_new = (w_old & ~wmask) | (w_data_reg & wmask);
/* verilator lint_on UNUSEDSIGNAL */
// AxPROT carries no meaning here (every access is allowed)
wire unused_prot = &{1'b0, s_axil_awprot, s_axil_arprot};

// ---- read channel --------------------------------------------------------------------
reg         rvalid_reg;
reg [31:0]  rdata_reg;
reg [1:0]   rresp_reg;

assign s_axil_arready = !rvalid_reg;
assign s_axil_rvalid = rvalid_reg;
assign s_axil_rdata = rdata_reg;
assign s_axil_rresp = rresp_reg;

wire       r_in_map = (s_axil_araddr >> 8) == {AXIL_ADDR_W{1'b0}};
wire [7:0] r_addr = {s_axil_araddr[7:2], 2'b00};
reg [31:0] r_value;
reg        r_hit;

always @* begin : read_mux
    r_value = 32'd0;
    r_hit = r_in_map;
    case (r_addr)
        A_ID: r_value = ID_VALUE;
        A_CONFIG: begin
            r_value[15:0] = CFG_DEPTH[15:0];
            r_value[23:16] = CFG_NIS[7:0];
        end
        A_CTRL: r_value = 32'd0;
        A_STATUS: begin
            r_value[0] = running;
            r_value[1] = done;
            r_value[2] = err;
            r_value[3] = send_valid;
            r_value[16 +: STEP_W] = step;
        end
        A_IRQ_STATUS: r_value[NFLAGS-1:0] = flags_reg;
        A_IRQ_ENABLE: r_value = word_irq_en;
        A_TIMEOUT: r_value = word_timeout;
        A_ERR_COUNT: r_value[ERR_W-1:0] = err_count;
        A_ERR_INFO: begin
            r_value[NODE_W-1:0] = err_src;
            r_value[16 +: FLOW_W] = err_flow;
        end
        A_NI_BUSY: r_value[NIS-1:0] = ni_busy;
        A_ENTRY_ADDR: r_value = word_entry_addr;
        A_ENTRY_W0: r_value = word_w0;
        A_ENTRY_W1: r_value = word_w1;
        A_ENTRY_W2: r_value = word_w2;
        A_ENTRY_W3: r_value = word_w3;
        A_ENTRY_CMD: r_value = 32'd0;
        A_RD_W0: begin
            r_value[1:0] = rd_op;
            r_value[2] = rd_dep_op;
            r_value[3] = rd_src_chk;
            r_value[4 +: CNT_W] = rd_dep_count;
            r_value[12 +: STEP_W] = rd_step;
            r_value[28] = rd_entry_valid;
            r_value[29] = rd_issued;
        end
        A_RD_W1: begin
            r_value[FLOW_W-1:0] = rd_flow;
            r_value[16 +: NODE_W] = rd_peer;
        end
        A_RD_W2: r_value[LEN_W-1:0] = rd_len;
        A_RD_W3: begin
            r_value[NODE_W-1:0] = rd_src;
            r_value[16 +: CNT_W] = rd_count;
        end
        default: r_hit = 1'b0;
    endcase
    if (!r_hit) begin
        r_value = 32'd0;
    end
end

// ---- flags ---------------------------------------------------------------------------
wire [NFLAGS-1:0] flag_set = {ev_timeout, ev_wrong_src, ev_unexp, done && !done_d_reg};
wire [NFLAGS-1:0] flag_clr = (wr && w_addr == A_IRQ_STATUS) ? wbits[NFLAGS-1:0] : {NFLAGS{1'b0}};

always @(posedge clk) begin
    if (rst) begin
        aw_full_reg <= 1'b0;
        aw_addr_reg <= {AXIL_ADDR_W{1'b0}};
        w_full_reg <= 1'b0;
        w_data_reg <= 32'd0;
        w_strb_reg <= 4'd0;
        bvalid_reg <= 1'b0;
        bresp_reg <= RESP_OKAY;
        rvalid_reg <= 1'b0;
        rdata_reg <= 32'd0;
        rresp_reg <= RESP_OKAY;
        flags_reg <= {NFLAGS{1'b0}};
        irq_en_reg <= {NFLAGS{1'b0}};
        timeout_reg <= {TMO_W{1'b0}};
        entry_addr_reg <= {ADDR_W{1'b0}};
        e_op_reg <= 2'd0;
        e_dep_op_reg <= 1'b0;
        e_src_chk_reg <= 1'b0;
        e_dep_count_reg <= {CNT_W{1'b0}};
        e_step_reg <= {STEP_W{1'b0}};
        e_flow_reg <= {FLOW_W{1'b0}};
        e_peer_reg <= {NODE_W{1'b0}};
        e_len_reg <= {LEN_W{1'b0}};
        e_src_reg <= {NODE_W{1'b0}};
        start_reg <= 1'b0;
        clear_reg <= 1'b0;
        load_reg <= 1'b0;
        read_reg <= 1'b0;
        cmd_addr_reg <= {ADDR_W{1'b0}};
        done_d_reg <= 1'b0;
    end else begin
        // AXI write: hold AW and W, write when both are here and B is free
        if (s_axil_awvalid && !aw_full_reg) begin
            aw_full_reg <= 1'b1;
            aw_addr_reg <= s_axil_awaddr;
        end
        if (s_axil_wvalid && !w_full_reg) begin
            w_full_reg <= 1'b1;
            w_data_reg <= s_axil_wdata;
            w_strb_reg <= s_axil_wstrb;
        end
        if (do_write) begin
            aw_full_reg <= 1'b0;
            w_full_reg <= 1'b0;
            bvalid_reg <= 1'b1;
            bresp_reg <= w_hit ? RESP_OKAY : RESP_SLVERR;
        end else if (s_axil_bready) begin
            bvalid_reg <= 1'b0;
        end

        // AXI read
        if (s_axil_arvalid && !rvalid_reg) begin
            rvalid_reg <= 1'b1;
            rdata_reg <= r_value;
            rresp_reg <= r_hit ? RESP_OKAY : RESP_SLVERR;
        end else if (s_axil_rready) begin
            rvalid_reg <= 1'b0;
        end

        // command pulses: one cycle
        start_reg <= wr && w_addr == A_CTRL && wbits[0];
        clear_reg <= wr && w_addr == A_CTRL && wbits[1];
        load_reg <= wr && w_addr == A_ENTRY_CMD && wbits[0];
        read_reg <= wr && w_addr == A_ENTRY_CMD && wbits[1];
        if (wr && w_addr == A_ENTRY_CMD) begin
            cmd_addr_reg <= entry_addr_reg;
            if (wbits[2]) begin
                entry_addr_reg <= entry_addr_reg + 1'b1;
            end
        end

        // RW registers (only the bits the scheduler uses are stored)
        if (wr) begin
            case (w_addr)
                A_IRQ_ENABLE: irq_en_reg <= w_new[NFLAGS-1:0];
                A_TIMEOUT: timeout_reg <= w_new[TMO_W-1:0];
                A_ENTRY_ADDR: entry_addr_reg <= w_new[ADDR_W-1:0];
                A_ENTRY_W0: begin
                    e_op_reg <= w_new[1:0];
                    e_dep_op_reg <= w_new[2];
                    e_src_chk_reg <= w_new[3];
                    e_dep_count_reg <= w_new[4 +: CNT_W];
                    e_step_reg <= w_new[12 +: STEP_W];
                end
                A_ENTRY_W1: begin
                    e_flow_reg <= w_new[FLOW_W-1:0];
                    e_peer_reg <= w_new[16 +: NODE_W];
                end
                A_ENTRY_W2: e_len_reg <= w_new[LEN_W-1:0];
                A_ENTRY_W3: e_src_reg <= w_new[NODE_W-1:0];
                default: begin
                end
            endcase
        end

        // sticky flags: set by events, cleared by W1C or CTRL.clear (a set wins over a W1C)
        done_d_reg <= done;
        if (clear_reg) begin
            flags_reg <= {NFLAGS{1'b0}};
        end else begin
            flags_reg <= (flags_reg & ~flag_clr) | flag_set;
        end
    end
end

assign sched_start = start_reg;
assign sched_clear = clear_reg;
assign load_valid = load_reg;
assign load_addr = cmd_addr_reg;
assign load_op = e_op_reg;
assign load_flow = e_flow_reg;
assign load_peer = e_peer_reg;
assign load_step = e_step_reg;
assign load_len = e_len_reg;
assign load_dep_op = e_dep_op_reg;
assign load_dep_count = e_dep_count_reg;
assign load_src = e_src_reg;
assign load_src_chk = e_src_chk_reg;
assign rd_en = read_reg;
assign rd_addr = cmd_addr_reg;
assign timeout_cycles = timeout_reg;
assign irq = |(flags_reg & irq_en_reg);

endmodule

`resetall
