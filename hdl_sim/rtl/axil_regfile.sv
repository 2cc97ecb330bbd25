// AXI4-Lite register file: NREGS 32-bit registers, one transaction per channel at a time.
// Read-only registers (RO_MASK) return ro_values; writes to them are ignored but answered OKAY.
// Addresses past NREGS answer DECERR so a wrong offset shows up in software.
`resetall
`timescale 1ns / 1ps
`default_nettype none

module axil_regfile #(
    parameter int NREGS = 16,                          // number of 32-bit registers
    parameter int ADDR_W = 8,                          // byte address width
    parameter logic [NREGS*32-1:0] RESET_VALS = '0,    // reset value of each register
    parameter logic [NREGS-1:0] RO_MASK = '0           // 1 = read-only (value from ro_values)
) (
    input  wire                  clk,
    input  wire                  rst,
    output wire [NREGS*32-1:0]   regs,        // current register values (RW ones)
    input  wire [NREGS*32-1:0]   ro_values,   // values returned for RO registers
    output logic [NREGS-1:0]     wr_stb,      // one-cycle pulse: register i was written
    `define AXIL_ADDR_W ADDR_W
    `include "axil_ports.svh"
);
    initial begin
        if (NREGS < 1 || NREGS > (1 << (ADDR_W - 2))) $error("axil_regfile: NREGS does not fit ADDR_W");
    end

    logic [31:0] r [NREGS];
    logic        bvalid_q, rvalid_q;
    logic [1:0]  bresp_q, rresp_q;
    logic [31:0] rdata_q;

    // Accept AW and W together: legal for a slave, and it keeps one write in flight.
    wire do_write = s_axil_awvalid && s_axil_wvalid && !bvalid_q;
    wire do_read  = s_axil_arvalid && !rvalid_q;
    localparam int IW = (NREGS > 1) ? $clog2(NREGS) : 1;
    wire [ADDR_W-3:0] widx = s_axil_awaddr[ADDR_W-1:2];
    wire [ADDR_W-3:0] ridx = s_axil_araddr[ADDR_W-1:2];
    wire [IW-1:0] wi = widx[IW-1:0];   // used only once widx is known to be in range
    wire [IW-1:0] ri = ridx[IW-1:0];
    wire unused_addr_bits = &{1'b0, s_axil_awaddr[1:0], s_axil_araddr[1:0]};  // word-aligned map

    assign s_axil_awready = do_write;
    assign s_axil_wready  = do_write;
    assign s_axil_bvalid  = bvalid_q;
    assign s_axil_bresp   = bresp_q;
    assign s_axil_arready = do_read;
    assign s_axil_rvalid  = rvalid_q;
    assign s_axil_rresp   = rresp_q;
    assign s_axil_rdata   = rdata_q;

    for (genvar i = 0; i < NREGS; i++) begin : g_out
        assign regs[i*32 +: 32] = r[i];
    end

    always_ff @(posedge clk) begin
        wr_stb <= '0;
        if (bvalid_q && s_axil_bready) bvalid_q <= 1'b0;
        if (rvalid_q && s_axil_rready) rvalid_q <= 1'b0;
        if (do_write) begin
            bvalid_q <= 1'b1;
            if (int'(widx) < NREGS) begin
                bresp_q <= 2'b00;
                wr_stb[wi] <= 1'b1;
                if (!RO_MASK[wi]) begin
                    for (int b = 0; b < 4; b++) begin
                        if (s_axil_wstrb[b]) r[wi][b*8 +: 8] <= s_axil_wdata[b*8 +: 8];
                    end
                end
            end else begin
                bresp_q <= 2'b11;  // DECERR
            end
        end
        if (do_read) begin
            rvalid_q <= 1'b1;
            if (int'(ridx) < NREGS) begin
                rresp_q <= 2'b00;
                rdata_q <= RO_MASK[ri] ? ro_values[ri*32 +: 32] : r[ri];
            end else begin
                rresp_q <= 2'b11;
                rdata_q <= 32'h0;
            end
        end
        if (rst) begin
            bvalid_q <= 1'b0;
            rvalid_q <= 1'b0;
            bresp_q  <= 2'b00;
            rresp_q  <= 2'b00;
            rdata_q  <= 32'h0;
            wr_stb   <= '0;
            for (int i = 0; i < NREGS; i++) r[i] <= RESET_VALS[i*32 +: 32];
        end
    end
endmodule

`resetall
