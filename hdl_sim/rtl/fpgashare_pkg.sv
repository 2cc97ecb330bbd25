// GENERATED from runtime/hwtables/tables.toml by fpgashare.hwtables.generate;
// do not edit: change tables.toml and run `fpgashare rtl tables` (docs/hardware-tables.md).
`resetall
`timescale 1ns / 1ps
`default_nettype none

package fpgashare_pkg;
    // A table: each importer uses some of its names, none uses all of them.
    /* verilator lint_off UNUSEDPARAM */
    // shell
    localparam int MODULE_WINDOW = 4096;
    localparam int SLOT_REG_BASE = 16;
    localparam int SLOT_REG_STRIDE = 4;
    localparam int INFO_VERSION = 1;

    // shell register word indices
    localparam int REG_SHELL_ID = 0;
    localparam int REG_INFO = 1;
    localparam int REG_CYCLES_LO = 2;
    localparam int REG_CYCLES_HI = 3;
    localparam int REG_CFG_CTRL = 4;
    localparam int REG_CFG_STATUS = 5;
    localparam int REG_CFG_WORDS = 6;
    localparam int REG_CFG_CYCLES = 7;
    localparam int REG_CFG_LOADS = 8;
    localparam int REG_DEBUG = 9;
    localparam int REG_ROUTE_OUT = 10;
    localparam int REG_IDCODE = 11;
    localparam int REG_LINK_ERR = 12;
    localparam int REG_ROUTE_ERR = 13;
    localparam int REG_STREAMS = 14;

    // offsets in a slot's register group
    localparam int SLOT_STATUS = 0;
    localparam int SLOT_ROUTE = 1;
    localparam int SLOT_BEATS_IN = 2;
    localparam int SLOT_BEATS_OUT = 3;

    // register fields: bits [LSB + W - 1 : LSB]
    localparam int CFG_CTRL_SLOT_LSB = 0;
    localparam int CFG_CTRL_SLOT_W = 4;
    localparam int CFG_STATUS_STATE_LSB = 0;
    localparam int CFG_STATUS_STATE_W = 2;
    localparam int CFG_STATUS_ERROR_LSB = 8;
    localparam int CFG_STATUS_ERROR_W = 8;
    localparam int CFG_STATUS_TARGET_LSB = 16;
    localparam int CFG_STATUS_TARGET_W = 4;
    localparam int DEBUG_BYPASS_LSB = 0;
    localparam int DEBUG_BYPASS_W = 1;
    localparam int ROUTE_SOURCE_LSB = 0;
    localparam int ROUTE_SOURCE_W = 4;
    localparam int ROUTE_STREAM_LSB = 8;
    localparam int ROUTE_STREAM_W = 3;
    localparam int ROUTE_ENABLE_LSB = 31;
    localparam int ROUTE_ENABLE_W = 1;
    localparam int ROUTE_ERR_STREAM_LSB = 0;
    localparam int ROUTE_ERR_STREAM_W = 1;
    localparam int ROUTE_ERR_SHARED_LSB = 1;
    localparam int ROUTE_ERR_SHARED_W = 1;
    localparam int SLOT_STATUS_STATE_LSB = 0;
    localparam int SLOT_STATUS_STATE_W = 2;
    localparam int SLOT_STATUS_MODULE_LSB = 2;
    localparam int SLOT_STATUS_MODULE_W = 5;
    localparam int SLOT_STATUS_ERROR_LSB = 8;
    localparam int SLOT_STATUS_ERROR_W = 8;
    localparam int SLOT_STATUS_DECOUPLED_LSB = 16;
    localparam int SLOT_STATUS_DECOUPLED_W = 1;

    // CFG_STATUS states
    localparam logic [1:0] CFG_IDLE = 2'd0;
    localparam logic [1:0] CFG_BUSY = 2'd1;
    localparam logic [1:0] CFG_LOADED = 2'd2;
    localparam logic [1:0] CFG_FAILED = 2'd3;

    // SLOT_STATUS states
    localparam logic [1:0] SLOT_BLANK = 2'd0;
    localparam logic [1:0] SLOT_LOADING = 2'd1;
    localparam logic [1:0] SLOT_ACTIVE = 2'd2;
    localparam logic [1:0] SLOT_FAILED = 2'd3;

    // configuration port
    localparam logic [31:0] SYNC = 32'hAA995566;
    localparam logic [31:0] NOP = 32'h20000000;
    localparam logic [31:0] RM_MAGIC = 32'h52504D44;
    localparam int MODULE_ID_BITS = 5;

    // configuration registers
    localparam logic [4:0] CFG_REG_CRC = 5'd0;
    localparam logic [4:0] CFG_REG_FAR = 5'd1;
    localparam logic [4:0] CFG_REG_FDRI = 5'd2;
    localparam logic [4:0] CFG_REG_CMD = 5'd4;
    localparam logic [4:0] CFG_REG_IDCODE = 5'd12;

    // allowed commands
    localparam logic [31:0] CMD_NULL = 32'd0;
    localparam logic [31:0] CMD_WCFG = 32'd1;
    localparam logic [31:0] CMD_LFRM = 32'd3;
    localparam logic [31:0] CMD_START = 32'd5;
    localparam logic [31:0] CMD_RCRC = 32'd7;
    localparam logic [31:0] CMD_AGHIGH = 32'd8;
    localparam logic [31:0] CMD_GRESTORE = 32'd10;
    localparam logic [31:0] CMD_DESYNC = 32'd13;

    // load error codes
    localparam logic [7:0] PORT_ERR_OK = 8'd0;
    localparam logic [7:0] PORT_ERR_NO_SYNC = 8'd1;
    localparam logic [7:0] PORT_ERR_TRUNCATED = 8'd2;
    localparam logic [7:0] PORT_ERR_BAD_PACKET = 8'd3;
    localparam logic [7:0] PORT_ERR_BAD_REGISTER = 8'd4;
    localparam logic [7:0] PORT_ERR_BAD_IDCODE = 8'd5;
    localparam logic [7:0] PORT_ERR_FDRI_BEFORE_IDCODE = 8'd6;
    localparam logic [7:0] PORT_ERR_FDRI_BEFORE_WCFG = 8'd7;
    localparam logic [7:0] PORT_ERR_FAR_OUTSIDE_SLOT = 8'd8;
    localparam logic [7:0] PORT_ERR_PARTIAL_FRAME = 8'd9;
    localparam logic [7:0] PORT_ERR_REGION_MISMATCH = 8'd10;
    localparam logic [7:0] PORT_ERR_UNKNOWN_MODULE = 8'd11;
    localparam logic [7:0] PORT_ERR_CRC_MISMATCH = 8'd12;
    localparam logic [7:0] PORT_ERR_MISSING_CRC = 8'd13;
    localparam logic [7:0] PORT_ERR_BAD_COMMAND = 8'd14;
    localparam logic [7:0] PORT_ERR_BAD_SLOT = 8'd15;
    localparam logic [7:0] PORT_ERR_NO_FRAME_DATA = 8'd16;

    // module ids
    localparam int MOD_BLANK = 0;
    localparam int MOD_CONV3X3 = 1;
    localparam int MOD_SOBEL_MAG = 2;
    localparam int MOD_THRESHOLD = 3;
    localparam int MOD_DOWNSCALE2X = 4;
    localparam int MOD_RGB2GRAY = 5;
    localparam int MOD_DNN_TILE = 6;
    localparam int MOD_ERODE3X3 = 7;
    localparam int MOD_DILATE3X3 = 8;
    localparam int MOD_MEDIAN3X3 = 9;
    localparam int MOD_RGB2HSV = 10;
    localparam int MOD_IN_RANGE = 11;
    localparam int MOD_MOMENTS = 12;
    localparam int MOD_ABSDIFF = 13;
    localparam int MOD_BG_UPDATE = 14;
    localparam int MOD_FAST9 = 15;
    localparam int MOD_TEMPLATE_MATCH = 16;

    // registers every vision module has
    localparam int MREG_ID = 0;
    localparam int MREG_WIDTH = 1;
    localparam int MREG_HEIGHT = 2;
    localparam int MREG_STATUS = 3;
    localparam int MREG_FRAMES = 4;
    localparam int MREG_FIRST_OWN = 5;

    // dnn_tile load-stream sections
    localparam int SECTION_ID_BITS = 4;
    localparam logic [3:0] SEC_DESC = 4'd1;
    localparam logic [3:0] SEC_WEIGHTS = 4'd2;
    localparam logic [3:0] SEC_BIAS = 4'd3;
    localparam logic [3:0] SEC_MULT = 4'd4;
    localparam logic [3:0] SEC_SHIFT = 4'd5;

    // a partial bitstream may write configuration register r
    function automatic logic cfg_reg_writable(input logic [4:0] r);
        case (r)
            5'd0, 5'd1, 5'd2, 5'd4, 5'd5, 5'd6, 5'd8, 5'd9, 5'd10, 5'd11, 5'd12, 5'd13, 5'd14, 5'd16, 5'd17, 5'd24: return 1'b1;
            default: return 1'b0;
        endcase
    endfunction

    // a partial bitstream may issue command c (anything else could touch logic outside the slot)
    function automatic logic cmd_allowed(input logic [31:0] c);
        case (c)
            32'd0, 32'd1, 32'd3, 32'd5, 32'd7, 32'd8, 32'd10, 32'd13: return 1'b1;
            default: return 1'b0;
        endcase
    endfunction
    /* verilator lint_on UNUSEDPARAM */
endpackage : fpgashare_pkg

`resetall
