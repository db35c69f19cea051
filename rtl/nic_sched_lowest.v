// Lowest set bit of a vector: one-hot, index and "any" (the scheduler's tie-break rule:
// lowest table address, lowest free NI).

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_sched_lowest #(
    // width of the request vector
    parameter N = 8,
    // width of the index output (at least ceil(log2(N)), at least 1)
    parameter IDX_W = 3
) (
    input  wire [N-1:0]     req,
    output reg  [N-1:0]     onehot,
    output reg  [IDX_W-1:0] index,
    output wire             any
);

assign any = |req;

always @* begin : pick
    integer k;
    reg found;
    found = 1'b0;
    onehot = {N{1'b0}};
    index = {IDX_W{1'b0}};
    for (k = 0; k < N; k = k + 1) begin
        if (req[k] && !found) begin
            found = 1'b1;
            onehot[k] = 1'b1;
            index = k[IDX_W-1:0];
        end
    end
end

endmodule

`resetall
