// One-hot multiplexer: the OR of the W-bit words of `data` whose `sel` bit is set
// (zero when no bit is set). Used to read the selected table entry's fields.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_sched_mux #(
    // number of words
    parameter N = 8,
    // bits per word
    parameter W = 8
) (
    input  wire [N*W-1:0] data,
    input  wire [N-1:0]   sel,
    output reg  [W-1:0]   out
);

`ifndef SYNTHESIS
initial begin
    if (N < 1) $fatal(1, "nic_sched_mux: N = %0d must be at least 1", N);
    if (W < 1) $fatal(1, "nic_sched_mux: W = %0d must be at least 1", W);
end
`endif

always @* begin : or_mux
    integer k;
    out = {W{1'b0}};
    for (k = 0; k < N; k = k + 1) begin
        out = out | (data[k*W +: W] & {W{sel[k]}});
    end
end

endmodule

`resetall
