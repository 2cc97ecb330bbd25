"""GENERATED from runtime/hwtables/tables.toml by fpgashare.hwtables.generate;
do not edit: change tables.toml and run `fpgashare rtl tables` (docs/hardware-tables.md)."""

from __future__ import annotations

from enum import IntEnum

# shell
MODULE_WINDOW = 0x1000
SLOT_REG_BASE = 16
SLOT_REG_STRIDE = 4
INFO_VERSION = 1

# shell register word indices
REG_SHELL_ID = 0
REG_INFO = 1
REG_CYCLES_LO = 2
REG_CYCLES_HI = 3
REG_CFG_CTRL = 4
REG_CFG_STATUS = 5
REG_CFG_WORDS = 6
REG_CFG_CYCLES = 7
REG_CFG_LOADS = 8
REG_DEBUG = 9
REG_ROUTE_OUT = 10
REG_IDCODE = 11
REG_LINK_ERR = 12
REG_ROUTE_ERR = 13
REG_STREAMS = 14

# offsets in a slot's register group
SLOT_STATUS = 0
SLOT_ROUTE = 1
SLOT_BEATS_IN = 2
SLOT_BEATS_OUT = 3

# register fields: bits [LSB + W - 1 : LSB]; MASK is the field in place
CFG_CTRL_SLOT_LSB = 0
CFG_CTRL_SLOT_W = 4
CFG_CTRL_SLOT_MASK = 0xf
CFG_STATUS_STATE_LSB = 0
CFG_STATUS_STATE_W = 2
CFG_STATUS_STATE_MASK = 0x3
CFG_STATUS_ERROR_LSB = 8
CFG_STATUS_ERROR_W = 8
CFG_STATUS_ERROR_MASK = 0xff00
CFG_STATUS_TARGET_LSB = 16
CFG_STATUS_TARGET_W = 4
CFG_STATUS_TARGET_MASK = 0xf0000
DEBUG_BYPASS_LSB = 0
DEBUG_BYPASS_W = 1
DEBUG_BYPASS_MASK = 0x1
ROUTE_SOURCE_LSB = 0
ROUTE_SOURCE_W = 4
ROUTE_SOURCE_MASK = 0xf
ROUTE_STREAM_LSB = 8
ROUTE_STREAM_W = 3
ROUTE_STREAM_MASK = 0x700
ROUTE_ENABLE_LSB = 31
ROUTE_ENABLE_W = 1
ROUTE_ENABLE_MASK = 0x80000000
ROUTE_ERR_STREAM_LSB = 0
ROUTE_ERR_STREAM_W = 1
ROUTE_ERR_STREAM_MASK = 0x1
ROUTE_ERR_SHARED_LSB = 1
ROUTE_ERR_SHARED_W = 1
ROUTE_ERR_SHARED_MASK = 0x2
SLOT_STATUS_STATE_LSB = 0
SLOT_STATUS_STATE_W = 2
SLOT_STATUS_STATE_MASK = 0x3
SLOT_STATUS_MODULE_LSB = 2
SLOT_STATUS_MODULE_W = 5
SLOT_STATUS_MODULE_MASK = 0x7c
SLOT_STATUS_ERROR_LSB = 8
SLOT_STATUS_ERROR_W = 8
SLOT_STATUS_ERROR_MASK = 0xff00
SLOT_STATUS_DECOUPLED_LSB = 16
SLOT_STATUS_DECOUPLED_W = 1
SLOT_STATUS_DECOUPLED_MASK = 0x10000

# CFG_STATUS states
CFG_IDLE = 0
CFG_BUSY = 1
CFG_LOADED = 2
CFG_FAILED = 3

# SLOT_STATUS states
SLOT_BLANK = 0
SLOT_LOADING = 1
SLOT_ACTIVE = 2
SLOT_FAILED = 3

# configuration port
SYNC = 0xaa995566
NOP = 0x20000000
RM_MAGIC = 0x52504d44
MODULE_ID_BITS = 5

# configuration registers
CFG_REG_CRC = 0
CFG_REG_FAR = 1
CFG_REG_FDRI = 2
CFG_REG_CMD = 4
CFG_REG_IDCODE = 12

# allowed commands
CMD_NULL = 0
CMD_WCFG = 1
CMD_LFRM = 3
CMD_START = 5
CMD_RCRC = 7
CMD_AGHIGH = 8
CMD_GRESTORE = 10
CMD_DESYNC = 13

WRITABLE_REGS = frozenset({0, 1, 2, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 16, 17, 24})
ALLOWED_CMDS = frozenset({0, 1, 3, 5, 7, 8, 10, 13})


class PortError(IntEnum):
    """Load error codes of the configuration port (SV PORT_ERR_*)."""

    OK = 0
    NO_SYNC = 1
    TRUNCATED = 2
    BAD_PACKET = 3
    BAD_REGISTER = 4
    BAD_IDCODE = 5
    FDRI_BEFORE_IDCODE = 6
    FDRI_BEFORE_WCFG = 7
    FAR_OUTSIDE_SLOT = 8
    PARTIAL_FRAME = 9
    REGION_MISMATCH = 10
    UNKNOWN_MODULE = 11
    CRC_MISMATCH = 12
    MISSING_CRC = 13
    BAD_COMMAND = 14
    BAD_SLOT = 15
    NO_FRAME_DATA = 16

    @property
    def description(self) -> str:
        """What the code means."""
        return PORT_ERROR_DESCRIPTIONS[self]


PORT_ERROR_DESCRIPTIONS = {
    PortError.OK: 'accepted',
    PortError.NO_SYNC: 'no sync word 0xAA995566 before the end of the data',
    PortError.TRUNCATED: 'the data ended before DESYNC (truncated packet or bitstream)',
    PortError.BAD_PACKET: 'malformed packet header (reserved bits, read/reserved opcode, stray Type-2 or NOP data)',
    PortError.BAD_REGISTER: 'write to a register that is not writable',
    PortError.BAD_IDCODE: 'IDCODE does not match the device',
    PortError.FDRI_BEFORE_IDCODE: 'frame data (FDRI) before an IDCODE check',
    PortError.FDRI_BEFORE_WCFG: 'frame data (FDRI) before the WCFG command',
    PortError.FAR_OUTSIDE_SLOT: 'frame address range reaches outside the target slot',
    PortError.PARTIAL_FRAME: 'FDRI length is not a whole number of frames',
    PortError.REGION_MISMATCH: "frame data does not cover exactly the slot's region",
    PortError.UNKNOWN_MODULE: 'frame data names no module this slot can hold',
    PortError.CRC_MISMATCH: 'CRC mismatch',
    PortError.MISSING_CRC: 'DESYNC without a CRC check after the frame data',
    PortError.BAD_COMMAND: 'command not allowed in a partial bitstream',
    PortError.BAD_SLOT: 'target slot does not exist',
    PortError.NO_FRAME_DATA: 'DESYNC before any frame data',
}

# module ids (SV MOD_<NAME>)
MODULE_IDS = {
    'blank': 0,
    'conv3x3': 1,
    'sobel_mag': 2,
    'threshold': 3,
    'downscale2x': 4,
    'rgb2gray': 5,
    'dnn_tile': 6,
    'erode3x3': 7,
    'dilate3x3': 8,
    'median3x3': 9,
    'rgb2hsv': 10,
    'in_range': 11,
    'moments': 12,
    'absdiff': 13,
    'bg_update': 14,
    'fast9': 15,
    'template_match': 16,
}

# registers every vision module has
MREG_ID = 0
MREG_WIDTH = 1
MREG_HEIGHT = 2
MREG_STATUS = 3
MREG_FRAMES = 4
MREG_FIRST_OWN = 5

# dnn_tile load-stream sections
SECTION_ID_BITS = 4
SEC_DESC = 1
SEC_WEIGHTS = 2
SEC_BIAS = 3
SEC_MULT = 4
SEC_SHIFT = 5
