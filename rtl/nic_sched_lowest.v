// Lowest set bit of a vector as a balanced tree: index, one-hot and "any" (the
// scheduler's tie-break rule: lowest table address, lowest free NI).
//
// The request vector is padded with zeros to 2**IDX_W leaves; each tree node keeps the
// lower child's index when the lower child has a request, else the upper child's with
// its bit set, so the index is ceil(log2(N)) 2:1 stages deep instead of N. The one-hot
// output decodes the index (gated by `any`).

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
    output wire [IDX_W-1:0] index,
    output wire             any
);

localparam P = 1 << IDX_W;  // leaves

`ifndef SYNTHESIS
initial begin
    if (N < 1) $fatal(1, "nic_sched_lowest: N = %0d must be at least 1", N);
    if (IDX_W < 1 || P < N) $fatal(1, "nic_sched_lowest: IDX_W = %0d cannot index N = %0d", IDX_W, N);
end
`endif

// The tree, level by level, in place: before level b, slot j holds the subtree of leaves
// j*2**b .. (j+1)*2**b-1 (whether it has a request, and the lowest one's index); level
// b merges slots 2j and 2j+1 into slot j, and the upper half adds bit b to its index.
reg [P-1:0]       t_any;
reg [P*IDX_W-1:0] t_idx;

always @* begin : tree
    integer b;
    integer j;
    reg [IDX_W-1:0] bit_b;
    t_any = {P{1'b0}};
    t_any[N-1:0] = req;
    t_idx = {(P*IDX_W){1'b0}};
    for (b = 0; b < IDX_W; b = b + 1) begin
        bit_b = {IDX_W{1'b0}};
        bit_b[b] = 1'b1;
        for (j = 0; j < (P >> (b + 1)); j = j + 1) begin
            if (t_any[2*j]) begin
                t_idx[j*IDX_W +: IDX_W] = t_idx[(2*j)*IDX_W +: IDX_W];
            end else begin
                t_idx[j*IDX_W +: IDX_W] = t_idx[(2*j+1)*IDX_W +: IDX_W] | bit_b;
            end
            t_any[j] = t_any[2*j] | t_any[2*j+1];
        end
    end
end

assign any = t_any[0];
assign index = t_idx[IDX_W-1:0];

always @* begin : decode
    integer k;
    for (k = 0; k < N; k = k + 1) begin
        onehot[k] = any && (index == k[IDX_W-1:0]);
    end
end

endmodule

`resetall
