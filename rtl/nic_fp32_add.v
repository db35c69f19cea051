// IEEE-754 binary32 addition, round to nearest (ties to even), one lane; combinational
// (LAT = 0) or pipelined (LAT = 1 to 7 cycles from a, b to y).
//
//   y = a + b
//
// Number handling (the Python reference hw_models.rtl.datapath_ref.f32_add does the same):
//   * subnormal inputs are flushed to a zero of their sign (denormals-are-zero);
//   * a result whose magnitude is below 2^-126 is flushed to a zero of its sign
//     (flush-to-zero; such a result is exact before the flush, so no rounding is lost);
//   * x + (-x) of normal numbers is +0; (+0) + (-0) = +0, (-0) + (-0) = -0;
//   * overflow rounds to infinity (round to nearest even);
//   * Inf + finite = Inf; Inf + Inf of one sign = Inf; Inf + (-Inf) = NaN;
//   * any NaN input, or Inf - Inf, gives the canonical quiet NaN 0x7FC00000 (payloads
//     are not propagated).
// Method: align the smaller operand with guard, round and sticky bits, add or subtract
// the 24-bit significands, normalise (a carry, or a leading-zero count), round to nearest
// even on (guard, round | sticky, lsb).
// Pipeline (LAT): stage 1 decodes the special cases, compares the magnitudes and takes the
// exponent difference (1a), then aligns and adds/subtracts (1b); stage 2 counts the
// leading zeros (2a) and normalises (2b); stage 3 rounds (3a) and selects (3b). The registers, in
// the order LAT adds them: after stage 1 (LAT >= 1), after stage 2 (LAT >= 2), on the
// inputs a and b (LAT >= 3: a block RAM's output register when a is read from one),
// between 1a and 1b (LAT >= 4), between 2a and 2b (LAT >= 5), a second one on the inputs
// (LAT >= 6: when a block RAM's read port takes the first as its read register, this one
// is its output register or a fabric register after it), between 3a and 3b (LAT = 7).
// The stages run every cycle (no enable): y is the sum of the a, b presented LAT clock
// edges earlier, the same bits for every LAT.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_fp32_add #(
    // pipeline registers between a, b and y (0: combinational)
    parameter LAT = 0
) (
    input  wire        clk,
    input  wire [31:0] a,
    input  wire [31:0] b,
    output reg  [31:0] y
);

`ifndef SYNTHESIS
initial begin
    if (LAT < 0 || LAT > 7) $fatal(1, "nic_fp32_add: LAT = %0d out of range 0..7", LAT);
end
`endif

localparam [31:0] QNAN = 32'h7FC00000;

// ---------------------------------------------------------------- inputs (register at LAT >= 3)
wire [63:0] in_q;
wire [31:0] ai = in_q[63:32];
wire [31:0] bi = in_q[31:0];

// ---------------------------------------------------------------- stage 1a: decode, compare
wire       sa = ai[31];
wire       sb = bi[31];
wire [7:0] ea = ai[30:23];
wire [7:0] eb = bi[30:23];
wire [22:0] fa = ai[22:0];
wire [22:0] fb = bi[22:0];

wire a_nan = (ea == 8'hFF) && (fa != 23'd0);
wire b_nan = (eb == 8'hFF) && (fb != 23'd0);
wire a_inf = (ea == 8'hFF) && (fa == 23'd0);
wire b_inf = (eb == 8'hFF) && (fb == 23'd0);
wire a_zero = (ea == 8'd0);  // zero or subnormal (flushed)
wire b_zero = (eb == 8'd0);

// the operand of the larger magnitude is "big"
wire a_big = {ea, fa} >= {eb, fb};
wire        s_big = a_big ? sa : sb;
wire [7:0]  e_big = a_big ? ea : eb;
wire [22:0] f_big = a_big ? fa : fb;
wire [22:0] f_sml = a_big ? fb : fa;
wire        sub = sa ^ sb;
// the exponent difference (big minus small): both differences taken beside the compare,
// one selected by it
wire [7:0]  d_ab = ea - eb;
wire [7:0]  d_ba = eb - ea;
wire [7:0]  d_1a = a_big ? d_ab : d_ba;

reg         spec;    // the result is decided by the special cases alone
reg  [31:0] spec_y;  // ... and is this

always @* begin
    spec = 1'b1;
    if (a_nan || b_nan || (a_inf && b_inf && sub)) begin
        spec_y = QNAN;
    end else if (a_inf) begin
        spec_y = {sa, 8'hFF, 23'd0};
    end else if (b_inf) begin
        spec_y = {sb, 8'hFF, 23'd0};
    end else if (a_zero && b_zero) begin
        spec_y = {sa & sb, 31'd0};
    end else if (a_zero) begin
        spec_y = bi;
    end else if (b_zero) begin
        spec_y = ai;
    end else begin
        spec = 1'b0;
        spec_y = 32'd0;
    end
end

// stage 1a -> 1b: {spec, spec_y, s_big, e_big, sub, d, f_big, f_sml}
localparam SA_W = 1 + 32 + 1 + 8 + 1 + 8 + 23 + 23;
wire [SA_W-1:0] sa_d = {spec, spec_y, s_big, e_big, sub, d_1a, f_big, f_sml};
wire [SA_W-1:0] sa_q;

// ---------------------------------------------------------------- stage 1b: align, add
wire        spec1 = sa_q[SA_W-1];
wire [31:0] spec_y1 = sa_q[SA_W-2 -: 32];
wire        s_big1 = sa_q[63];
wire [7:0]  e_big1 = sa_q[62:55];
wire        sub1 = sa_q[54];
wire [7:0]  d = sa_q[53:46];
wire [22:0] f_big1 = sa_q[45:23];
wire [22:0] f_sml1 = sa_q[22:0];

// significands with the hidden bit and three extra bits (guard, round, sticky): 27 bits
wire [26:0] m_big = {1'b1, f_big1, 3'b000};
wire [26:0] m_sml = {1'b1, f_sml1, 3'b000};
reg  [26:0] al;      // the smaller significand aligned, its lowest bit the sticky OR

always @* begin : align
    reg [26:0] lost_mask;
    lost_mask = ~({27{1'b1}} << d);
    if (d >= 8'd27) begin
        al = 27'd1;  // all of it is below the sticky bit, and it is not zero
    end else begin
        al = m_sml >> d;
        al[0] = al[0] | ((m_sml & lost_mask) != 27'd0);
    end
end

wire [27:0] sum1 = sub1 ? ({1'b0, m_big} - {1'b0, al}) : ({1'b0, m_big} + {1'b0, al});  // bit 27: carry

// stage 1 -> 2: {spec, spec_y, s_big, e_big, sum}
localparam S1_W = 1 + 32 + 1 + 8 + 28;
wire [S1_W-1:0] s1_d = {spec1, spec_y1, s_big1, e_big1, sum1};
wire [S1_W-1:0] s1_q;

// ---------------------------------------------------------------- stage 2a: leading zeros
wire [27:0] sum = s1_q[27:0];

reg  [4:0]  lz;      // leading zeros of sum[26:0] (used when there is no carry)
reg         found;

always @* begin : lzc
    integer k;
    lz = 5'd0;
    found = 1'b0;
    k = 0;  // assigned on every path: no latch for the loop variable (synth_ecp5 refuses one)
    for (k = 26; k >= 0; k = k - 1) begin
        if (!found && sum[k]) begin
            found = 1'b1;
            lz = 5'd26 - k[4:0];
        end
    end
end

// stage 2a -> 2b: {spec, spec_y, s_big, e_big, sum, cancelled, lz}
localparam SB_W = S1_W + 1 + 5;
wire [SB_W-1:0] sb_d = {s1_q[S1_W-1:28], sum, sum == 28'd0, lz};
wire [SB_W-1:0] sb_q;

// ---------------------------------------------------------------- stage 2b: normalise
wire        spec2 = sb_q[SB_W-1];
wire [31:0] spec_y2 = sb_q[SB_W-2 -: 32];
wire        s_big2 = sb_q[42];
wire [7:0]  e_big2 = sb_q[41:34];
wire [27:0] sum2 = sb_q[33:6];
wire        zero2 = sb_q[5];
wire [4:0]  lz2 = sb_q[4:0];

reg  [26:0] m;       // normalised: bit 26 the hidden bit
reg  [9:0]  e;       // biased exponent of m, signed (may underflow below 1)

always @* begin : normalise
    if (sum2[27]) begin
        // carry: shift right by one, keeping the sticky bit
        m = {sum2[27:2], sum2[1] | sum2[0]};
        e = {2'b00, e_big2} + 10'd1;
    end else begin
        m = sum2[26:0] << lz2;
        e = {2'b00, e_big2} - {5'd0, lz2};
    end
end

// stage 2 -> 3: {spec, spec_y, s_big, cancelled, m, e}
localparam S2_W = 1 + 32 + 1 + 1 + 27 + 10;
wire [S2_W-1:0] s2_d = {spec2, spec_y2, s_big2, zero2, m, e};
wire [S2_W-1:0] s2_q;

// ---------------------------------------------------------------- stage 3: round, select
wire        spec3 = s2_q[S2_W-1];
wire [31:0] spec_y3 = s2_q[S2_W-2 -: 32];
wire        s_big3 = s2_q[38];
wire        zero3 = s2_q[37];
wire [26:0] m3 = s2_q[36:10];
wire [9:0]  e3 = s2_q[9:0];

// stage 3a: the rounding increment, the exponent's overflow and underflow compares for
// both outcomes of the increment (taken beside it, one selected by its carry)
wire        rnd_up = m3[2] && (m3[1] || m3[0] || m3[3]);
wire [24:0] mant_r = {1'b0, m3[26:3]} + {24'd0, rnd_up};  // bit 24: rounding carried out
wire [22:0] frac_r = mant_r[24] ? mant_r[23:1] : mant_r[22:0];
wire [7:0]  e_r = mant_r[24] ? e3[7:0] + 8'd1 : e3[7:0];
wire        ovf_r = mant_r[24] ? ($signed(e3) >= 10'sd254) : ($signed(e3) >= 10'sd255);
wire        unf_r = mant_r[24] ? ($signed(e3) <= -10'sd1) : ($signed(e3) <= 10'sd0);

// stage 3a -> 3b: {spec, spec_y, s_big, cancelled, overflow, underflow, exponent, fraction}
localparam SC_W = 1 + 32 + 1 + 1 + 1 + 1 + 8 + 23;
wire [SC_W-1:0] sc_d = {spec3, spec_y3, s_big3, zero3, ovf_r, unf_r, e_r, frac_r};
wire [SC_W-1:0] sc_q;

// stage 3b: select
wire        spec4 = sc_q[SC_W-1];
wire [31:0] spec_y4 = sc_q[SC_W-2 -: 32];
wire        s_big4 = sc_q[34];
wire        zero4 = sc_q[33];
wire        ovf4 = sc_q[32];
wire        unf4 = sc_q[31];
wire [7:0]  e4 = sc_q[30:23];
wire [22:0] frac4 = sc_q[22:0];

always @* begin : select
    if (spec4) begin
        y = spec_y4;
    end else if (zero4) begin
        y = 32'd0;  // exact cancellation: +0
    end else if (ovf4) begin
        y = {s_big4, 8'hFF, 23'd0};  // overflow
    end else if (unf4) begin
        y = {s_big4, 31'd0};  // below the smallest normal: flushed
    end else begin
        y = {s_big4, e4, frac4};
    end
end

// ---------------------------------------------------------------- pipeline registers
generate
    if (LAT >= 6) begin : g_r00
        reg [63:0] r0;
        reg [63:0] r00;
        always @(posedge clk) begin
            r0 <= {a, b};
            r00 <= r0;
        end
        assign in_q = r00;
    end else if (LAT >= 3) begin : g_r0
        reg [63:0] r0;
        always @(posedge clk) r0 <= {a, b};
        assign in_q = r0;
    end else begin : g_w0
        assign in_q = {a, b};
    end
    if (LAT >= 4) begin : g_ra
        reg [SA_W-1:0] ra;
        always @(posedge clk) ra <= sa_d;
        assign sa_q = ra;
    end else begin : g_wa
        assign sa_q = sa_d;
    end
    if (LAT >= 5) begin : g_rb
        reg [SB_W-1:0] rb;
        always @(posedge clk) rb <= sb_d;
        assign sb_q = rb;
    end else begin : g_wb
        assign sb_q = sb_d;
    end
    if (LAT >= 7) begin : g_rc
        reg [SC_W-1:0] rc;
        always @(posedge clk) rc <= sc_d;
        assign sc_q = rc;
    end else begin : g_wc
        assign sc_q = sc_d;
    end
    if (LAT >= 1) begin : g_r1
        reg [S1_W-1:0] r1;
        always @(posedge clk) r1 <= s1_d;
        assign s1_q = r1;
    end else begin : g_w1
        assign s1_q = s1_d;
    end
    if (LAT >= 2) begin : g_r2
        reg [S2_W-1:0] r2;
        always @(posedge clk) r2 <= s2_d;
        assign s2_q = r2;
    end else begin : g_w2
        assign s2_q = s2_d;
    end
    if (LAT == 0) begin : g_noclk
        wire unused_clk = clk;  // combinational: the clock is not used
    end
endgenerate

endmodule

`resetall
