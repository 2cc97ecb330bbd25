"""The board build: Vivado Tcl generated from a platform manifest (``flow``), and the folder that
goes under /etc/fpgashare on a board (``package``)."""
