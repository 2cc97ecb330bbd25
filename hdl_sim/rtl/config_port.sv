// config_port: a model of the ICAP/PCAP configuration port for partial bitstreams.
//
// One 32-bit word per cycle (big-endian words of the .bin, TLAST on the last word). Software first
// arms the port with the target slot (as the DFX Controller's per-slot trigger does); the slot is
// then decoupled and blank until the load ends. The parser follows the Xilinx packet format:
// words before the sync word 0xAA995566 are ignored; Type-1 packets (NOP / write, register [17:13],
// count [10:0]) and Type-2 packets (count [26:0], register of the preceding Type-1 write).
// CRC is CRC-32C (reflected, poly 0x82F63B78) over each (5-bit register, 32-bit data) write as in
// prjxray's xc7series icap_crc; CMD RCRC resets it and a matching CRC write resets it too.
//
// Checks, each with its own error code (PORT_ERR_* in fpgashare_pkg, the hardware tables): IDCODE
// written and equal before FDRI, WCFG before FDRI, FAR inside the target slot, FDRI a whole number
// of frames covering exactly the slot's region, frame data naming a module the slot holds (in
// MODULE_ID_BITS), CRC match, DESYNC after the data and a CRC check, no truncated packet. On
// success: active module set, RM reset for one cycle, then the
// slot is re-coupled, exactly 2 cycles after the DESYNC word was accepted.
//
// Fused regions (runtime/catalogue/fused_regions.py): slot k with SLOT_FUSED_FRAMES[k] != 0 hosts a region of
// slots k..SLOT_FUSED_LAST[k]. A partial for it starts at slot k's first frame and covers
// SLOT_FUSED_FRAMES[k] frames; the modules of SLOT_FUSED_MODULES[k] load only that way (and no other
// module does). While such a load runs the other members are loading (decoupled); once it is active
// they stay blank (decoupled) and fused_on[k] is set. Arming any member evicts the host's fused
// module (its frames are about to be rewritten); arming the host evicts it too, as any load does.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module config_port import fpgashare_pkg::*; #(
    parameter int NUM_SLOTS = 2,
    parameter logic [31:0] IDCODE = 32'h03727093,
    parameter int FRAME_WORDS = 101,
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FAR_BASE = '0,   // first frame address of each slot
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FRAMES = '0,     // frames in each slot's region
    parameter logic [NUM_SLOTS*32-1:0] SLOT_MODULES = '0,    // bit m: the slot can hold module m
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_FRAMES = '0,   // frames of the region slot k hosts, 0 = none
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_MODULES = '0,  // bit m: module m loads into slot k's region
    parameter logic [NUM_SLOTS*32-1:0] SLOT_FUSED_LAST = '0      // last member slot of the region slot k hosts
) (
    input  wire                    clk,
    input  wire                    rst,
    input  wire [31:0]             s_axis_tdata,
    input  wire                    s_axis_tvalid,
    output wire                    s_axis_tready,
    input  wire                    s_axis_tlast,
    input  wire                    arm,          // pulse: begin a load into arm_slot
    input  wire [3:0]              arm_slot,
    output logic [NUM_SLOTS*MODULE_ID_BITS-1:0] slot_module,  // active module per slot, 0 = blank
    output logic [NUM_SLOTS-1:0]   slot_loading,
    output logic [NUM_SLOTS-1:0]   slot_failed,
    output logic [NUM_SLOTS-1:0]   slot_rst,     // one-cycle RM reset after a good load
    output logic [NUM_SLOTS*8-1:0] slot_error,   // last load error per slot
    output logic [1:0]             status,       // CFG_IDLE, CFG_BUSY, CFG_LOADED (last load ok), CFG_FAILED
    output logic [7:0]             error,        // error code of the last load
    output logic [3:0]             target,
    output logic [31:0]            words,        // words accepted in the last load, up to its end
    output logic [31:0]            cycles,       // cycles from its first word to activation or error
    output logic [31:0]            loads,        // good loads since reset
    output logic [NUM_SLOTS-1:0]   fused_on      // slot k holds a module spanning its fused region
);
    localparam int MB = MODULE_ID_BITS;

    typedef enum logic [2:0] {P_IDLE, P_SYNC, P_HDR, P_DATA, P_ACT, P_ACT2, P_DRAIN} phase_t;
    phase_t phase;

    logic [4:0]  reg_q, last_t1_reg;
    logic        t1_open;        // the previous packet was a Type-1 write of count 0
    logic [26:0] remaining;
    logic [31:0] crc_q, far_q;
    logic        idcode_ok, wcfg_ok, far_set, fdri_done, crc_checked, drain_after, counting;
    logic [26:0] fdri_idx;
    logic [MB-1:0] mod_q;

    assign s_axis_tready = (phase == P_SYNC) || (phase == P_HDR) || (phase == P_DATA) || (phase == P_DRAIN);
    wire take = s_axis_tvalid && s_axis_tready;
    wire [31:0] w = s_axis_tdata;

    // The CRC a byte at a time: CRC_TABLE[i] is the reflected CRC-32C register after eight bit
    // steps from i (the standard byte table), so the four data bytes are four look-ups and the
    // five register bits five branch-free steps. The same function of (addr, data, prev) as the
    // 37 bit-serial steps (a CRC is linear: shifting a byte through the register xors in the
    // table entry of the byte and the register's low byte), at a fraction of the logic depth and
    // of the simulator's work per word.
    function automatic [31:0] crc_bit(input [31:0] crc, input bit_in);
        return (crc >> 1) ^ (32'h82F63B78 & {32{crc[0] ^ bit_in}});
    endfunction

    function automatic [256*32-1:0] crc_table();
        logic [31:0] c;
        for (int i = 0; i < 256; i++) begin
            c = 32'(i);
            for (int b = 0; b < 8; b++) c = crc_bit(c, 1'b0);
            crc_table[i*32 +: 32] = c;
        end
    endfunction

    localparam logic [256*32-1:0] CRC_TABLE = crc_table();

    function automatic [31:0] icap_crc(input [4:0] addr, input [31:0] data, input [31:0] prev);
        logic [31:0] crc;
        logic [7:0]  idx;
        crc = prev;
        for (int k = 0; k < 4; k++) begin
            idx = crc[7:0] ^ data[k*8 +: 8];
            crc = (crc >> 8) ^ CRC_TABLE[32*int'(idx) +: 32];
        end
        for (int i = 0; i < 5; i++) crc = crc_bit(crc, addr[i]);
        return crc;
    endfunction

    localparam int SW = (NUM_SLOTS > 1) ? $clog2(NUM_SLOTS) : 1;
    wire [SW-1:0] ti = target[SW-1:0];   // target < NUM_SLOTS is checked when the port is armed
    wire [SW-1:0] ai = arm_slot[SW-1:0];
    wire [31:0] t_base   = SLOT_FAR_BASE[target*32 +: 32];
    wire [31:0] t_frames = SLOT_FRAMES[target*32 +: 32];
    wire [31:0] t_mods   = SLOT_MODULES[target*32 +: 32];
    wire [31:0] t_ffr    = SLOT_FUSED_FRAMES[target*32 +: 32];
    wire [31:0] t_fmods  = SLOT_FUSED_MODULES[target*32 +: 32];

    // Member j of the region slot h hosts (h < j <= last[h]); regions do not overlap.
    function automatic logic member(input int h, input int j);
        return SLOT_FUSED_FRAMES[h*32 +: 32] != 0 && h < j && j <= int'(SLOT_FUSED_LAST[h*32 +: 32]);
    endfunction
    logic span_q;       // this load writes the target's fused region

    // Check of an FDRI packet of `count` words against the target slot's region.
    function automatic [7:0] fdri_check(input [26:0] count, input [31:0] far, input [31:0] base,
                                        input [31:0] frames);
        logic [63:0] words_left;
        if (far < base || 33'(far) >= 33'(base) + 33'(frames)) return PORT_ERR_FAR_OUTSIDE_SLOT;
        if ((count % 27'(FRAME_WORDS)) != 0) return PORT_ERR_PARTIAL_FRAME;
        words_left = (64'(base) + 64'(frames) - 64'(far)) * 64'(FRAME_WORDS);
        if (64'(count) > words_left) return PORT_ERR_FAR_OUTSIDE_SLOT;
        if (far != base || 64'(count) != 64'(frames) * 64'(FRAME_WORDS)) return PORT_ERR_REGION_MISMATCH;
        return 8'd0;
    endfunction

    // The port in four parts, by role, each register written by one of them:
    //   decode  (combinational) what the word on the port means in this phase: an error, DESYNC, a
    //           header that opens a packet with data;
    //   parser  the phase and the packet being read (register, words remaining, Type-1 context);
    //   crc     the running configuration CRC;
    //   writer  the configuration registers' effects (IDCODE, WCFG, FAR, the frame data's module);
    //   status  the load's outcome, counters, and each slot's module, loading (decoupled) and failed
    //           state, with the RM reset at activation.
    wire arm_ok = int'(arm_slot) < NUM_SLOTS;
    wire start = (phase == P_IDLE) && arm && arm_ok;           // a load begins
    wire reading = take && (phase == P_SYNC || phase == P_HDR || phase == P_DATA);
    wire in_data = take && (phase == P_DATA);                     // a data word for reg_q

    // ---- decode
    logic [7:0]  err;          // the load fails on this word
    logic        desync;       // this word is DESYNC's data and the load is good
    logic        t1_write;     // this header is a Type-1 write to a writable register
    logic        open_data;    // this header opens a packet with data words ...
    logic [4:0]  open_reg;     // ... for this register ...
    logic [26:0] open_count;   // ... of this many words
    wire         module_ok = w[31:MB] == 0 && w[MB-1:0] != 0 && t_mods[w[MB-1:0]]
                             && (t_fmods[w[MB-1:0]] == span_q);   // a fused module with its region only
    logic        span_open;    // this header opens an FDRI packet covering the target's fused region exactly
    always_comb begin
        err = 8'd0;
        desync = 1'b0;
        t1_write = 1'b0;
        open_data = 1'b0;
        open_reg = '0;
        open_count = '0;
        span_open = 1'b0;
        if (reading && phase == P_HDR) begin
            // A count-0 Type-1 write only announces a Type-2 packet; a NOP is exactly NOP.
            if (t1_open && w[31:29] != 3'b010) err = PORT_ERR_BAD_PACKET;
            else if (w[31:29] == 3'b001) begin
                if (w[26:18] != 0 || w[12:11] != 0) err = PORT_ERR_BAD_PACKET;
                else if (w[28:27] == 2'b00) begin
                    if (w != NOP) err = PORT_ERR_BAD_PACKET;
                end else if (w[28:27] != 2'b10) err = PORT_ERR_BAD_PACKET;  // reads, reserved
                else if (!cfg_reg_writable(w[17:13])) err = PORT_ERR_BAD_REGISTER;
                else begin
                    t1_write = 1'b1;
                    if (w[10:0] != 0) begin
                        open_data = 1'b1;
                        open_reg = w[17:13];
                        open_count = 27'(w[10:0]);
                    end
                end
            end else if (w[31:29] == 3'b010) begin
                if (!t1_open || w[28:27] != 2'b10) err = PORT_ERR_BAD_PACKET;
                else if (w[26:0] != 0) begin
                    open_data = 1'b1;
                    open_reg = last_t1_reg;
                    open_count = w[26:0];
                end
            end else begin
                err = PORT_ERR_BAD_PACKET;
            end
            // A packet with data follows: both packet types open it the same way.
            if (open_data && open_reg == CFG_REG_FDRI) begin
                if (fdri_done) err = PORT_ERR_BAD_PACKET;
                else if (!idcode_ok) err = PORT_ERR_FDRI_BEFORE_IDCODE;
                else if (!wcfg_ok) err = PORT_ERR_FDRI_BEFORE_WCFG;
                else if (!far_set) err = PORT_ERR_FAR_OUTSIDE_SLOT;
                // the target's fused region exactly, else the slot's own region is checked
                else if (t_ffr != 0 && fdri_check(open_count, far_q, t_base, t_ffr) == 8'd0) span_open = 1'b1;
                else err = fdri_check(open_count, far_q, t_base, t_frames);
            end
        end
        if (in_data) begin
            if (reg_q == CFG_REG_CRC && w != crc_q) err = PORT_ERR_CRC_MISMATCH;
            case (reg_q)
                CFG_REG_IDCODE: if (w != IDCODE) err = PORT_ERR_BAD_IDCODE;
                CFG_REG_CMD: begin
                    if (!cmd_allowed(w)) err = PORT_ERR_BAD_COMMAND;
                    else if (w == CMD_DESYNC) begin
                        if (remaining != 1) err = PORT_ERR_BAD_PACKET;  // DESYNC must end its packet
                        else if (!fdri_done) err = PORT_ERR_NO_FRAME_DATA;
                        else if (!crc_checked) err = PORT_ERR_MISSING_CRC;
                        else desync = 1'b1;
                    end
                end
                CFG_REG_FDRI: begin
                    if (fdri_idx == 0 && w != RM_MAGIC) err = PORT_ERR_UNKNOWN_MODULE;
                    if (fdri_idx == 1 && !module_ok) err = PORT_ERR_UNKNOWN_MODULE;
                end
                default: ;
            endcase
        end
        // End of the transfer before the bitstream ended.
        if (reading && err == 0 && !desync && s_axis_tlast)
            err = (phase == P_SYNC) ? PORT_ERR_NO_SYNC : PORT_ERR_TRUNCATED;
    end

    // ---- parser
    always_ff @(posedge clk) begin
        case (phase)
            P_IDLE: if (start) begin
                phase <= P_SYNC;
                t1_open <= 1'b0;
                drain_after <= 1'b0;
                remaining <= '0;
            end
            P_SYNC, P_HDR, P_DATA: if (take) begin
                if (phase == P_SYNC) begin
                    if (w == SYNC) phase <= P_HDR;
                end else if (phase == P_HDR) begin
                    t1_open <= t1_write && w[10:0] == 0;
                    if (t1_write) last_t1_reg <= w[17:13];
                    if (open_data) begin
                        reg_q <= open_reg;
                        remaining <= open_count;
                        phase <= P_DATA;
                    end
                end else begin
                    remaining <= remaining - 1;
                    if (remaining == 1) phase <= P_HDR;
                end
                if (err != 0) phase <= s_axis_tlast ? P_IDLE : P_DRAIN;
                else if (desync) begin
                    phase <= P_ACT;
                    // Words after DESYNC are ignored by the device; drain them unless this was the last.
                    drain_after <= !s_axis_tlast;
                end
            end
            P_ACT: phase <= P_ACT2;
            P_ACT2: phase <= drain_after ? P_DRAIN : P_IDLE;
            P_DRAIN: if (take && s_axis_tlast) phase <= P_IDLE;
            default: phase <= P_IDLE;
        endcase
        if (rst) begin
            phase <= P_IDLE;
            {drain_after, t1_open} <= '0;
            remaining <= '0;
            reg_q <= '0;
            last_t1_reg <= '0;
        end
    end

    // ---- crc: over every data word but the CRC's own; a matching CRC write and CMD RCRC reset it
    always_ff @(posedge clk) begin
        if (start) crc_q <= '0;
        if (in_data) begin
            if (reg_q == CFG_REG_CRC) begin
                if (w == crc_q) crc_q <= '0;
            end else begin
                crc_q <= icap_crc(reg_q, w, crc_q);
            end
            if (reg_q == CFG_REG_CMD && cmd_allowed(w) && w == CMD_RCRC) crc_q <= '0;
        end
        if (rst) crc_q <= '0;
    end

    // ---- writer
    always_ff @(posedge clk) begin
        if (start) begin
            {idcode_ok, wcfg_ok, far_set, fdri_done, crc_checked} <= '0;
            mod_q <= '0;
            span_q <= 1'b0;
        end
        if (take && phase == P_HDR && span_open && err == 0) span_q <= 1'b1;
        if (take && phase == P_HDR && open_data) fdri_idx <= '0;
        if (in_data) begin
            if (reg_q == CFG_REG_CRC && w == crc_q && fdri_done) crc_checked <= 1'b1;
            case (reg_q)
                CFG_REG_IDCODE: if (w == IDCODE) idcode_ok <= 1'b1;
                CFG_REG_FAR: begin
                    far_q <= w;
                    far_set <= 1'b1;
                end
                CFG_REG_CMD: if (cmd_allowed(w) && w == CMD_WCFG) wcfg_ok <= 1'b1;
                CFG_REG_FDRI: begin
                    fdri_idx <= fdri_idx + 1;
                    if (fdri_idx == 1 && module_ok) mod_q <= w[MB-1:0];
                    if (remaining == 1) fdri_done <= 1'b1;
                end
                default: ;
            endcase
        end
        if (rst) begin
            {idcode_ok, wcfg_ok, far_set, fdri_done, crc_checked} <= '0;
            far_q <= '0;
            fdri_idx <= '0;
            mod_q <= '0;
            span_q <= 1'b0;
        end
    end

    // ---- status: the load's outcome and counters; per slot its module, loading (the shell keeps a
    // loading slot decoupled), failed state and error; the RM reset at activation
    always_ff @(posedge clk) begin
        slot_rst <= '0;
        if (counting) cycles <= cycles + 1;
        if (take && counting) words <= words + 1;
        case (phase)
            P_IDLE: if (arm) begin
                target <= arm_slot;
                error <= 8'd0;
                words <= '0;
                cycles <= '0;
                counting <= 1'b0;
                if (!arm_ok) begin
                    error <= PORT_ERR_BAD_SLOT;
                    status <= CFG_FAILED;
                end else begin
                    status <= CFG_BUSY;
                    slot_module[arm_slot*MB +: MB] <= '0;
                    slot_loading[ai] <= 1'b1;
                    slot_failed[ai] <= 1'b0;
                    slot_error[arm_slot*8 +: 8] <= 8'd0;
                    fused_on[ai] <= 1'b0;
                    // A member's load rewrites frames of its host's fused module: that module goes.
                    for (int h = 0; h < NUM_SLOTS; h++)
                        if (member(h, int'(arm_slot)) && fused_on[h]) begin
                            slot_module[h*MB +: MB] <= '0;
                            fused_on[h] <= 1'b0;
                        end
                end
            end
            P_SYNC, P_HDR, P_DATA: if (take) begin
                if (!counting) begin
                    counting <= 1'b1;
                    words <= 32'd1;
                end
                // The region's partial begins: its other members are loading (decoupled) and blank.
                if (phase == P_HDR && span_open && err == 0)
                    for (int j = 0; j < NUM_SLOTS; j++)
                        if (member(int'(target), j)) begin
                            slot_module[j*MB +: MB] <= '0;
                            slot_loading[j] <= 1'b1;
                            slot_failed[j] <= 1'b0;
                        end
                if (err != 0) begin
                    error <= err;
                    status <= CFG_FAILED;
                    slot_failed[ti] <= 1'b1;
                    slot_error[target*8 +: 8] <= err;
                    counting <= 1'b0;
                    // A failed fused load leaves its other members blank (decoupled), not loading.
                    for (int j = 0; j < NUM_SLOTS; j++)
                        if (member(int'(target), j)) slot_loading[j] <= 1'b0;
                end
            end
            P_ACT: begin
                slot_module[target*MB +: MB] <= mod_q;
                slot_rst[ti] <= 1'b1;
            end
            P_ACT2: begin
                slot_loading[ti] <= 1'b0;
                fused_on[ti] <= span_q;         // with the members' loading cleared, in one cycle
                for (int j = 0; j < NUM_SLOTS; j++)
                    if (member(int'(target), j)) slot_loading[j] <= 1'b0;
                status <= CFG_LOADED;
                loads <= loads + 1;
                counting <= 1'b0;
            end
            default: ;
        endcase
        if (rst) begin
            slot_module <= '0;
            slot_loading <= '0;
            slot_failed <= '0;
            slot_rst <= '0;
            slot_error <= '0;
            fused_on <= '0;
            status <= CFG_IDLE;
            error <= 8'd0;
            target <= 4'd0;
            words <= '0;
            cycles <= '0;
            loads <= '0;
            counting <= 1'b0;
        end
    end
endmodule

`resetall
