// Reduction adder: LANES element adders side by side; combinational (ADD_LAT = 0) or
// pipelined (ADD_LAT = 1 to 7: y is the sum of the a, b presented ADD_LAT clock edges
// earlier; the stages run every cycle, no enable; the bits do not depend on ADD_LAT).
//
//   y[l] = a[l] + b[l]   for every lane l (element l in bits l*32 +: 32)
//
// FMT = 0: 32-bit two's complement integers (or fixed point with any binary point, the
//          same addition), wrapping modulo 2^32.
// FMT = 1: IEEE-754 binary32, round to nearest even, subnormals flushed to zero, NaN
//          canonical (nic_fp32_add.v states the details).

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_reduce_add #(
    // elements added per cycle (1..16)
    parameter LANES = 2,
    // number format: 0 = int32 (wrapping), 1 = fp32
    parameter FMT = 1,
    // pipeline registers between a, b and y (0..7)
    parameter ADD_LAT = 0
) (
    input  wire                clk,
    input  wire [LANES*32-1:0] a,
    input  wire [LANES*32-1:0] b,
    output wire [LANES*32-1:0] y
);

`ifndef SYNTHESIS
initial begin
    if (LANES < 1 || LANES > 16) $fatal(1, "nic_reduce_add: LANES = %0d out of range 1..16", LANES);
    if (FMT != 0 && FMT != 1) $fatal(1, "nic_reduce_add: FMT = %0d must be 0 (int32) or 1 (fp32)", FMT);
    if (ADD_LAT < 0 || ADD_LAT > 7) $fatal(1, "nic_reduce_add: ADD_LAT = %0d out of range 0..7", ADD_LAT);
end
`endif

genvar l;
generate
    for (l = 0; l < LANES; l = l + 1) begin : g_lane
        if (FMT == 1) begin : g_fp
            nic_fp32_add #(.LAT(ADD_LAT)) u_add (.clk(clk), .a(a[l*32 +: 32]), .b(b[l*32 +: 32]), .y(y[l*32 +: 32]));
        end else begin : g_int
            wire [31:0] s0 = a[l*32 +: 32] + b[l*32 +: 32];
            if (ADD_LAT == 0) begin : g_comb
                assign y[l*32 +: 32] = s0;
            end else begin : g_pipe
                // the register after the carry chain, then ADD_LAT - 1 more
                reg [31:0] r [0:ADD_LAT-1];
                integer i;
                always @(posedge clk) begin
                    r[0] <= s0;
                    for (i = 1; i < ADD_LAT; i = i + 1) r[i] <= r[i - 1];
                end
                assign y[l*32 +: 32] = r[ADD_LAT-1];
            end
        end
    end
    if (ADD_LAT == 0 || FMT == 1) begin : g_clk_use
        wire unused_clk = clk;  // the int32 lanes of ADD_LAT 0 use no clock
    end
endgenerate

endmodule

`resetall
