// frame_pos: where an input beat stands in its frame, for the modules that count rows and columns
// themselves (downscale2x, moments): the beat's index in its row (NPPC pixels a beat, rows padded to
// whole beats) and its row. The frame size is latched while the frame has not begun, so WIDTH and
// HEIGHT written during a frame apply to the next one; an input TLAST that is early or late sets a
// sticky framing error.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module frame_pos #(
    parameter int NPPC = 1          // pixels per beat
) (
    input  wire         clk,
    input  wire         rst,
    input  wire  [11:0] cfg_width,   // the WIDTH and HEIGHT registers
    input  wire  [11:0] cfg_height,
    input  wire         take,        // a beat is accepted this cycle
    input  wire         last,        // its TLAST
    output logic [11:0] x,           // the beat's index in its row
    output logic [11:0] y,           // its row
    output wire  [11:0] width,       // the frame's size: the registers' until its first beat, then latched
    output wire  [11:0] height,
    output wire  [11:0] row_beats,   // beats per row
    output wire         row_end,     // the beat ends its row
    output wire         frame_end,   // the beat ends its frame
    output logic        framing_err
);
    logic [11:0] w_q, h_q;
    wire at_start = (x == '0) && (y == '0);
    assign width = at_start ? cfg_width : w_q;
    assign height = at_start ? cfg_height : h_q;
    assign row_beats = 12'((32'(width) + NPPC - 1) / NPPC);
    assign row_end = (x == row_beats - 1);
    assign frame_end = row_end && (y == height - 1);

    always_ff @(posedge clk) begin
        if (at_start) begin
            w_q <= cfg_width;
            h_q <= cfg_height;
        end
        if (take) begin
            if (last != row_end) framing_err <= 1'b1;
            if (row_end) begin
                x <= '0;
                y <= frame_end ? '0 : y + 1;
            end else begin
                x <= x + 1;
            end
        end
        if (rst) begin
            x <= '0;
            y <= '0;
            w_q <= '0;
            h_q <= '0;
            framing_err <= 1'b0;
        end
    end
endmodule

`resetall
