"""Always-ready AXI-Lite slaves on a DUT's ``m_axil_*`` ports, one per bit of its per-port fields (the
demultiplexer's ports, the fabric's slot windows): the bookkeeping of which responses are offered and
taken is the AXI-Lite handshake's, the same whichever design drives the requests."""

from __future__ import annotations

from cocotb.triggers import ReadOnly, RisingEdge


class AxilSlaves:
    """``count`` slaves: writes answer OKAY, a read returns 0xC0DE_0000 | port << 8 | address. Every
    request accepted at an edge goes into ``log``: ("w", port, address, data[, strobes]) (strobes if
    ``strobes``), ("r", port, address)."""

    def __init__(self, dut, count: int, log: list, strobes: bool = False) -> None:
        self.dut, self.count, self.log, self.strobes = dut, count, log, strobes
        full = (1 << count) - 1
        dut.m_axil_awready.value = full
        dut.m_axil_wready.value = full
        dut.m_axil_arready.value = full
        dut.m_axil_bresp.value = 0
        dut.m_axil_rresp.value = 0
        self.b_pending = self.r_pending = 0          # responses being offered
        self.b_ready_before = self.r_ready_before = 0  # offered responses whose READY is high until the next edge
        self.rdata = 0

    async def sample(self) -> None:
        """Wait for a rising edge and take what it accepted (left in its read-only phase)."""
        dut = self.dut
        await RisingEdge(dut.clk)
        await ReadOnly()
        aw, ar = int(dut.m_axil_awvalid.value), int(dut.m_axil_arvalid.value)
        # An offered response was taken at the edge just passed if READY was high before it.
        self.b_pending &= ~self.b_ready_before
        self.r_pending &= ~self.r_ready_before
        for p in range(self.count):
            if aw >> p & 1:
                write = ("w", p, int(dut.m_axil_awaddr.value), int(dut.m_axil_wdata.value))
                self.log.append((*write, int(dut.m_axil_wstrb.value)) if self.strobes else write)
                self.b_pending |= 1 << p
            if ar >> p & 1:
                addr = int(dut.m_axil_araddr.value)
                self.log.append(("r", p, addr))
                self.rdata = self.rdata & ~(0xFFFF_FFFF << (32 * p)) | (0xC0DE_0000 | p << 8 | addr) << (32 * p)
                self.r_pending |= 1 << p
        self.b_ready_before = int(dut.m_axil_bready.value) & self.b_pending
        self.r_ready_before = int(dut.m_axil_rready.value) & self.r_pending

    def drive(self) -> None:
        """Offer the pending responses (call once out of the read-only phase, at the falling edge)."""
        self.dut.m_axil_bvalid.value = self.b_pending
        self.dut.m_axil_rvalid.value = self.r_pending
        self.dut.m_axil_rdata.value = self.rdata
