"""The one lint function (hw_models.rtl.lint) reports what Verilator -Wall finds: a clean
module gives None, an unused input its warning."""

from __future__ import annotations

from hw_models.rtl.lint import lint_warnings

CLEAN = """`timescale 1ns / 1ps
`default_nettype none
module t #(parameter W = 4) (input wire [W-1:0] a, output wire [W-1:0] y);
assign y = ~a;
endmodule
"""


def test_a_clean_module_has_no_warnings_and_an_unused_input_is_reported(tmp_path):
    good = tmp_path / "t.v"
    good.write_text(CLEAN)
    assert lint_warnings([good], "t", {"W": 3}) is None
    bad = tmp_path / "u.v"
    bad.write_text(CLEAN.replace("module t", "module u").replace("input wire [W-1:0] a,",
                                                                  "input wire [W-1:0] a, input wire b,"))
    out = lint_warnings([bad], "u")
    assert out is not None and "UNUSED" in out and "'b'" in out
