// route_table: the shell's route registers for NUM_STREAMS video streams over NUM_SLOTS slots, and
// the check that keeps the streams' routes disjoint. It holds one route word per sink of the stream
// switch (sink k < NUM_SLOTS: slot k's input; sink NUM_SLOTS + s: stream s's output) and turns the
// words into the switch's physical routes.
//
// Route word: {enable[31], stream[10:8], source[3:0]}. The stream field is read on slot routes only
// (a stream's output belongs to that stream). Source 0 is the input of the route's own stream,
// source k + 1 is slot k's output; a source past the last slot routes nothing (as a disabled route).
// Each enabled slot belongs to the stream its route names. A write is refused - the word is not
// stored, ERR records why - when it would join two streams: a slot route naming a stream
// >= NUM_STREAMS (ERR[0]), or an enabled route whose source slot, or one of whose consumers (for a
// slot), belongs to another stream (ERR[1]). Writes that disable a route are always taken.
// ERR = {refused writes [31:16] (saturating), sink of the last refusal [15:8], 6'd0, shared, stream};
// err_clear zeroes it. With NUM_STREAMS = 1 and stream fields 0 every write is taken and the physical
// routes equal the words, as the single-stream shell's register routes did.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module route_table #(
    parameter int NUM_SLOTS = 2,
    parameter int NUM_STREAMS = 1,
    parameter int SEL_W = 4
) (
    input  wire                                  clk,
    input  wire                                  rst,
    input  wire [NUM_SLOTS+NUM_STREAMS-1:0]      wr,         // one-cycle pulse: sink i's word written (one at a time)
    input  wire [31:0]                           wdata,
    input  wire                                  err_clear,
    output wire [(NUM_SLOTS+NUM_STREAMS)*32-1:0] words,      // stored words, for read-back
    output logic [(NUM_SLOTS+NUM_STREAMS)*(SEL_W+1)-1:0] route,   // per switch sink: {enable, physical source}
    output wire [31:0]                           err
);
    localparam int N = NUM_SLOTS;
    localparam int NSNK = NUM_SLOTS + NUM_STREAMS;
    localparam int IW = $clog2(NSNK);   // NSNK >= 2
    initial begin
        if (NUM_STREAMS < 1 || NUM_STREAMS > NUM_SLOTS) $error("route_table: NUM_STREAMS must be 1..NUM_SLOTS");
        if (NUM_SLOTS > 8) $error("route_table: at most 8 slots (the stream field is 3 bits)");
        if (NUM_SLOTS + NUM_STREAMS > (1 << SEL_W)) $error("route_table: SEL_W too narrow");
    end

    logic [31:0] word [NSNK];
    logic [NSNK-1:0] en;
    logic [2:0] owner [NSNK];   // the stream a sink belongs to while enabled
    logic [3:0] src [NSNK];
    for (genvar i = 0; i < NSNK; i++) begin : g_sink
        assign words[i*32 +: 32] = word[i];
        assign en[i] = word[i][31];
        assign src[i] = word[i][3:0];
        if (i < N) begin : g_slot
            assign owner[i] = word[i][10:8];
        end else begin : g_out
            assign owner[i] = 3'(i - N);
        end
    end

    logic [15:0] refusals;
    logic [7:0] last_sink;
    logic err_stream, err_shared;
    assign err = {refusals, last_sink, 6'd0, err_shared, err_stream};

    // ---- the write, checked in the cycle that writes (at most one wr bit is set: one AXI-Lite write at
    // a time), inside the register's own branch: the same check of the same stored words as a
    // combinational one, but a simulator that evaluates combinational logic on every edge (Verilator)
    // runs it only when a route is written.
    always_ff @(posedge clk) begin
        if (|wr) begin : write
            logic [IW-1:0] wi;
            logic w_en, w_is_slot, bad_stream, shared;
            logic [3:0] w_src;
            logic [2:0] w_stream;
            wi = '0;
            for (int i = 0; i < NSNK; i++) if (wr[i]) wi = IW'(i);
            w_en = wdata[31];
            w_src = wdata[3:0];
            w_is_slot = int'(wi) < N;
            w_stream = w_is_slot ? wdata[10:8] : 3'(int'(wi) - N);
            bad_stream = w_en && w_is_slot && int'(w_stream) >= NUM_STREAMS;
            shared = 1'b0;
            // its source slot belongs to another stream
            for (int j = 0; j < N; j++) begin
                if (w_en && int'(w_src) == j + 1 && en[j] && owner[j] != w_stream) shared = 1'b1;
            end
            // a slot whose output another stream's sink takes
            for (int j = 0; j < NSNK; j++) begin
                if (w_en && w_is_slot && j != int'(wi) && en[j] && int'(src[j]) == int'(wi) + 1
                    && owner[j] != w_stream) shared = 1'b1;
            end
            if (bad_stream || shared) begin
                if (refusals != 16'hFFFF) refusals <= refusals + 1;
                last_sink <= 8'(wi);
                err_stream <= err_stream || bad_stream;
                err_shared <= err_shared || shared;
            end else begin
                word[wi] <= wdata;
            end
        end
        if (err_clear) begin
            refusals <= '0;
            last_sink <= '0;
            err_stream <= 1'b0;
            err_shared <= 1'b0;
        end
        if (rst) begin
            for (int i = 0; i < NSNK; i++) word[i] <= '0;
            refusals <= '0;
            last_sink <= '0;
            err_stream <= 1'b0;
            err_shared <= 1'b0;
        end
    end

    // ---- physical routes. Switch sources: 0 stream 0's input, k + 1 slot k, N + s stream s's input.
    always_comb begin
        for (int i = 0; i < NSNK; i++) begin
            logic live;
            logic [SEL_W-1:0] phys;
            live = en[i] && int'(src[i]) <= N;
            if (src[i] != 0) phys = SEL_W'(src[i]);
            else if (owner[i] == 0) phys = '0;
            else phys = SEL_W'(N + int'(owner[i]));
            route[i*(SEL_W+1) +: SEL_W+1] = {live, phys};
        end
    end

endmodule

`resetall
