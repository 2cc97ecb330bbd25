// rm_library: the reconfigurable modules a slot can hold, one per MODULE_ID (the id a partial
// bitstream's frame data names: MOD_* in fpgashare_pkg, generated from the hardware tables). The
// slot wrapper instantiates one per compatible id; ports are the common RM port list. NPPC (1 or 4) is the
// pixels per beat: gray pixels packed a byte each in the low NPPC bytes; the multi-channel modules
// (rgb2gray, rgb2hsv, in_range, absdiff, bg_update) take a pixel's channels in a 32-bit lane each,
// so at NPPC 4 the shell's stream is 128 bits (DATA_W = 32 * NPPC) and a gray beat uses its low word.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module rm_library import fpgashare_pkg::*; #(
    parameter int MODULE_ID = MOD_BLANK,
    parameter int DATA_W = 32,
    parameter int MAX_W = 1920,
    parameter int NPPC = 1,            // gray pixels per beat of the single-channel modules
    parameter logic [31:0] SEED = 32'h1234_5678,
    parameter int DNN_P = 8,
    parameter int DNN_ACT_ENTRIES = 4096,
    parameter int DNN_W_ENTRIES = 1024,
    parameter int DNN_PG_ENTRIES = 64,
    parameter int DNN_MAX_LAYERS = 16,
    parameter int DNN_URAM = 1             // dnn_tile memories in UltraRAM (1) or block RAM (0)
) (
    `include "rm_ports.svh"
);
    case (MODULE_ID)
        MOD_BLANK: begin : g_blank
            rm_blank #(.DATA_W(DATA_W), .SEED(SEED)) u_rm (.*);
        end
        MOD_CONV3X3: begin : g_conv3x3
            conv3x3 #(.DATA_W(DATA_W), .NPPC(NPPC), .MAX_W(MAX_W)) u_rm (.*);
        end
        MOD_SOBEL_MAG: begin : g_sobel_mag
            sobel_mag #(.DATA_W(DATA_W), .NPPC(NPPC), .MAX_W(MAX_W)) u_rm (.*);
        end
        MOD_THRESHOLD: begin : g_threshold
            threshold #(.DATA_W(DATA_W), .NPPC(NPPC)) u_rm (.*);
        end
        MOD_DOWNSCALE2X: begin : g_downscale2x
            downscale2x #(.DATA_W(DATA_W), .NPPC(NPPC), .MAX_W(MAX_W)) u_rm (.*);
        end
        MOD_RGB2GRAY: begin : g_rgb2gray
            rgb2gray #(.DATA_W(DATA_W), .NPPC(NPPC)) u_rm (.*);
        end
        MOD_DNN_TILE: begin : g_dnn_tile
            dnn_tile #(
                .DATA_W(DATA_W), .P(DNN_P), .ACT_ENTRIES(DNN_ACT_ENTRIES), .W_ENTRIES(DNN_W_ENTRIES),
                .PG_ENTRIES(DNN_PG_ENTRIES), .MAX_LAYERS(DNN_MAX_LAYERS), .URAM(DNN_URAM)
            ) u_rm (.*);
        end
        MOD_ERODE3X3: begin : g_erode3x3
            rank3x3 #(.DATA_W(DATA_W), .NPPC(NPPC), .MAX_W(MAX_W), .RANK(0), .MODULE_ID(16'(MOD_ERODE3X3))) u_rm (.*);
        end
        MOD_DILATE3X3: begin : g_dilate3x3
            rank3x3 #(.DATA_W(DATA_W), .NPPC(NPPC), .MAX_W(MAX_W), .RANK(8), .MODULE_ID(16'(MOD_DILATE3X3))) u_rm (.*);
        end
        MOD_MEDIAN3X3: begin : g_median3x3
            rank3x3 #(.DATA_W(DATA_W), .NPPC(NPPC), .MAX_W(MAX_W), .RANK(4), .MODULE_ID(16'(MOD_MEDIAN3X3))) u_rm (.*);
        end
        MOD_RGB2HSV: begin : g_rgb2hsv
            rgb2hsv #(.DATA_W(DATA_W), .NPPC(NPPC)) u_rm (.*);
        end
        MOD_IN_RANGE: begin : g_in_range
            in_range #(.DATA_W(DATA_W), .NPPC(NPPC)) u_rm (.*);
        end
        MOD_MOMENTS: begin : g_moments
            moments #(.DATA_W(DATA_W), .NPPC(NPPC)) u_rm (.*);
        end
        MOD_ABSDIFF: begin : g_absdiff
            absdiff #(.DATA_W(DATA_W), .NPPC(NPPC)) u_rm (.*);
        end
        MOD_BG_UPDATE: begin : g_bg_update
            bg_update #(.DATA_W(DATA_W), .NPPC(NPPC)) u_rm (.*);
        end
        MOD_FAST9: begin : g_fast9
            fast9 #(.DATA_W(DATA_W), .NPPC(NPPC), .MAX_W(MAX_W)) u_rm (.*);
        end
        MOD_TEMPLATE_MATCH: begin : g_template_match
            template_match #(.DATA_W(DATA_W), .NPPC(NPPC), .MAX_W(MAX_W)) u_rm (.*);
        end
        default: begin : g_unknown
            $error("rm_library: no module with id %0d", MODULE_ID);
        end
    endcase
endmodule

`resetall
