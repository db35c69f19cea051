// Reduction adder: LANES element adders side by side, combinational.
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
    parameter FMT = 1
) (
    input  wire [LANES*32-1:0] a,
    input  wire [LANES*32-1:0] b,
    output wire [LANES*32-1:0] y
);

`ifndef SYNTHESIS
initial begin
    if (LANES < 1 || LANES > 16) $fatal(1, "nic_reduce_add: LANES = %0d out of range 1..16", LANES);
    if (FMT != 0 && FMT != 1) $fatal(1, "nic_reduce_add: FMT = %0d must be 0 (int32) or 1 (fp32)", FMT);
end
`endif

genvar l;
generate
    for (l = 0; l < LANES; l = l + 1) begin : g_lane
        if (FMT == 1) begin : g_fp
            nic_fp32_add u_add (.a(a[l*32 +: 32]), .b(b[l*32 +: 32]), .y(y[l*32 +: 32]));
        end else begin : g_int
            assign y[l*32 +: 32] = a[l*32 +: 32] + b[l*32 +: 32];
        end
    end
endgenerate

endmodule

`resetall
