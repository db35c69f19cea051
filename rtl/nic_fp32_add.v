// IEEE-754 binary32 addition, round to nearest (ties to even), one lane, combinational.
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

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_fp32_add (
    input  wire [31:0] a,
    input  wire [31:0] b,
    output reg  [31:0] y
);

localparam [31:0] QNAN = 32'h7FC00000;

wire       sa = a[31];
wire       sb = b[31];
wire [7:0] ea = a[30:23];
wire [7:0] eb = b[30:23];
wire [22:0] fa = a[22:0];
wire [22:0] fb = b[22:0];

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
wire [7:0]  e_sml = a_big ? eb : ea;
wire [22:0] f_big = a_big ? fa : fb;
wire [22:0] f_sml = a_big ? fb : fa;
wire        sub = sa ^ sb;
wire [7:0]  d = e_big - e_sml;

// significands with the hidden bit and three extra bits (guard, round, sticky): 27 bits
wire [26:0] m_big = {1'b1, f_big, 3'b000};
wire [26:0] m_sml = {1'b1, f_sml, 3'b000};

reg  [26:0] al;      // the smaller significand aligned, its lowest bit the sticky OR
reg  [27:0] sum;     // add/subtract result (bit 27: carry of an addition)
reg  [26:0] m;       // normalised: bit 26 the hidden bit
reg  [9:0]  e;       // biased exponent of m, signed (may underflow below 1)
reg  [4:0]  lz;
reg         rnd_up;
reg  [24:0] mant;    // rounded significand (bit 24: rounding carried out)
reg         found;

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

always @* begin : addsub
    integer k;
    sum = sub ? ({1'b0, m_big} - {1'b0, al}) : ({1'b0, m_big} + {1'b0, al});
    lz = 5'd0;
    found = 1'b0;
    k = 0;  // assigned on every path: no latch for the loop variable (synth_ecp5 refuses one)
    if (sum[27]) begin
        // carry: shift right by one, keeping the sticky bit
        m = {sum[27:2], sum[1] | sum[0]};
        e = {2'b00, e_big} + 10'd1;
    end else begin
        for (k = 26; k >= 0; k = k - 1) begin
            if (!found && sum[k]) begin
                found = 1'b1;
                lz = 5'd26 - k[4:0];
            end
        end
        m = sum[26:0] << lz;
        e = {2'b00, e_big} - {5'd0, lz};
    end
    rnd_up = m[2] && (m[1] || m[0] || m[3]);
    mant = {1'b0, m[26:3]} + {24'd0, rnd_up};
    if (mant[24]) begin
        mant = mant >> 1;
        e = e + 10'd1;
    end
end

always @* begin
    if (a_nan || b_nan || (a_inf && b_inf && sub)) begin
        y = QNAN;
    end else if (a_inf) begin
        y = {sa, 8'hFF, 23'd0};
    end else if (b_inf) begin
        y = {sb, 8'hFF, 23'd0};
    end else if (a_zero && b_zero) begin
        y = {sa & sb, 31'd0};
    end else if (a_zero) begin
        y = b;
    end else if (b_zero) begin
        y = a;
    end else if (sum == 28'd0) begin
        y = 32'd0;  // exact cancellation: +0
    end else if ($signed(e) >= 10'sd255) begin
        y = {s_big, 8'hFF, 23'd0};  // overflow
    end else if ($signed(e) <= 10'sd0) begin
        y = {s_big, 31'd0};  // below the smallest normal: flushed
    end else begin
        y = {s_big, e[7:0], mant[22:0]};
    end
end

endmodule

`resetall
