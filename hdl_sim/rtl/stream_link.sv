// stream_link: an AXI-Stream hop over a LANE_W-bit lane with a fixed LATENCY and credit-based flow
// control, the model of an inter-slot (inter-chiplet) link.
//
// Each DATA_W-bit beat is cut into ceil(DATA_W / LANE_W) flits; the sender spends one credit per
// flit and the receiver returns one credit, LATENCY cycles back, per flit it hands on. With
// CREDITS >= 2 * LATENCY + 2 the lane runs at one flit per cycle, i.e. LANE_W bits per cycle;
// with fewer credits the round trip limits it. TLAST/TUSER ride as sideband wires of the last flit.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module stream_link #(
    parameter int DATA_W = 32,
    parameter int LANE_W = 32,      // bits the lane carries per cycle
    parameter int LATENCY = 1,      // cycles from send to arrival (and back for credits)
    parameter int CREDITS = 4       // receiver buffer, in flits
) (
    input  wire               clk,
    input  wire               rst,
    input  wire [DATA_W-1:0]  s_axis_tdata,
    input  wire               s_axis_tvalid,
    output wire               s_axis_tready,
    input  wire               s_axis_tlast,
    input  wire               s_axis_tuser,
    output wire [DATA_W-1:0]  m_axis_tdata,
    output wire               m_axis_tvalid,
    input  wire               m_axis_tready,
    output wire               m_axis_tlast,
    output wire               m_axis_tuser,
    output wire [31:0]        flits_sent,     // counter, for bandwidth measurement
    output wire               credit_error    // sticky: the receive buffer overflowed
);
    initial begin
        if (LANE_W < 1 || DATA_W < 1) $error("stream_link: widths must be >= 1");
        if (LATENCY < 1) $error("stream_link: LATENCY must be >= 1");
        if (CREDITS < 1) $error("stream_link: CREDITS must be >= 1");
    end
    localparam int NFLITS = (DATA_W + LANE_W - 1) / LANE_W;
    localparam int FW = (NFLITS > 1) ? $clog2(NFLITS) : 1;
    localparam int PADDED = NFLITS * LANE_W;
    localparam int CW = $clog2(CREDITS + 1);
    localparam int FLIT_W = LANE_W + 3;  // lane + {beat last, beat user, flit ends beat}

    // ---- sender: serialize the current beat into flits, one per cycle while credits remain
    logic [CW-1:0] credits_q;
    logic [FW-1:0] idx_q;
    logic [31:0] sent_q;
    wire credit_back;
    wire [PADDED-1:0] beat = PADDED'(s_axis_tdata);
    wire [LANE_W-1:0] lane = beat[idx_q * LANE_W +: LANE_W];
    wire last_flit = (idx_q == FW'(NFLITS - 1));
    wire send = s_axis_tvalid && (credits_q != 0);
    assign s_axis_tready = send && last_flit;   // the beat is consumed with its last flit
    assign flits_sent = sent_q;

    always_ff @(posedge clk) begin
        if (send) begin
            idx_q <= last_flit ? '0 : idx_q + 1'b1;
            sent_q <= sent_q + 1;
        end
        credits_q <= credits_q - CW'(send) + CW'(credit_back);
        if (rst) begin
            idx_q <= '0;
            credits_q <= CW'(CREDITS);
            sent_q <= '0;
        end
    end

    // ---- the wire: LATENCY cycles each way (the receive FIFO's write is the last forward cycle)
    wire [FLIT_W:0] fwd_d = {send, s_axis_tlast, s_axis_tuser, last_flit, lane};
    wire [FLIT_W:0] fwd_q;
    pipe_delay #(.W(FLIT_W + 1), .LATENCY(LATENCY - 1)) u_fwd (.clk, .rst, .d(fwd_d), .q(fwd_q));

    wire rx_pop;
    pipe_delay #(.W(1), .LATENCY(LATENCY)) u_back (.clk, .rst, .d(rx_pop), .q(credit_back));

    // ---- receiver: buffer flits, reassemble beats
    wire [FLIT_W-1:0] rx_flit;
    wire rx_valid, rx_overflow;
    wire rx_ready_unused;
    sync_fifo #(.W(FLIT_W), .DEPTH(CREDITS)) u_rx (
        .clk, .rst,
        .s_data(fwd_q[FLIT_W-1:0]), .s_valid(fwd_q[FLIT_W]), .s_ready(rx_ready_unused),
        .m_data(rx_flit), .m_valid(rx_valid), .m_ready(rx_pop), .overflow(rx_overflow)
    );

    logic [PADDED-1:0] acc_q;
    logic [FW-1:0] ridx_q;
    logic err_q;
    wire rx_ends_beat = rx_flit[LANE_W];
    // A beat's last flit goes straight out (no extra register), so the link adds no latency of its own.
    wire [PADDED-1:0] assembled = (PADDED'(rx_flit[LANE_W-1:0]) << (ridx_q * LANE_W)) | acc_q;
    assign m_axis_tvalid = rx_valid && rx_ends_beat;
    assign m_axis_tdata  = assembled[DATA_W-1:0];
    assign m_axis_tlast  = rx_flit[LANE_W+2];
    assign m_axis_tuser  = rx_flit[LANE_W+1];
    assign rx_pop = rx_valid && (!rx_ends_beat || m_axis_tready);
    assign credit_error = err_q;

    always_ff @(posedge clk) begin
        if (rx_pop) begin
            if (rx_ends_beat) begin
                acc_q <= '0;
                ridx_q <= '0;
            end else begin
                acc_q <= assembled;
                ridx_q <= ridx_q + 1'b1;
            end
        end
        if (rx_overflow) err_q <= 1'b1;
        if (rst) begin
            acc_q <= '0;
            ridx_q <= '0;
            err_q <= 1'b0;
        end
    end

    wire unused_link = &{1'b0, rx_ready_unused, assembled};
endmodule

`resetall
