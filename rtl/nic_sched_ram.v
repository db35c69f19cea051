// Table memory for the fields nothing compares in parallel (peer, len): one write port
// (table load) and one registered read port with enable, read-first (a read in the cycle
// a load writes the same address returns the old word). Written so that synthesis infers
// LUT RAM or block RAM with its output register; the array itself is never reset. `rst`
// clears the output register only (a block RAM's output-register reset).

`resetall
`timescale 1ns / 1ps
`default_nettype none

module nic_sched_ram #(
    // words
    parameter DEPTH = 64,
    // bits per word
    parameter W = 8,
    // address bits (at least ceil(log2(DEPTH)), at least 1)
    parameter ADDR_W = 6
) (
    input  wire              clk,
    // synchronous reset of the read register (not of the array)
    input  wire              rst,
    input  wire              we,
    input  wire [ADDR_W-1:0] waddr,
    input  wire [W-1:0]      wdata,
    input  wire              re,
    input  wire [ADDR_W-1:0] raddr,
    output reg  [W-1:0]      q
);

`ifndef SYNTHESIS
initial begin
    if (DEPTH < 1 || DEPTH > 65536) $fatal(1, "nic_sched_ram: DEPTH = %0d out of range 1..65536", DEPTH);
    if (W < 1) $fatal(1, "nic_sched_ram: W = %0d must be at least 1", W);
    if (ADDR_W < 1 || ADDR_W > 16 || (1 << ADDR_W) < DEPTH)
        $fatal(1, "nic_sched_ram: ADDR_W = %0d out of range 1..16 or cannot address DEPTH = %0d words", ADDR_W, DEPTH);
end
`endif

reg [W-1:0] mem [0:DEPTH-1];

always @(posedge clk) begin
    if (we) begin
        mem[waddr] <= wdata;
    end
end

always @(posedge clk) begin
    if (rst) begin
        q <= {W{1'b0}};
    end else if (re) begin
        q <= mem[raddr];
    end
end

endmodule

`resetall
