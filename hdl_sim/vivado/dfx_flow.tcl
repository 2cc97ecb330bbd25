# dfx_flow.tcl: the board build of fpgashare, Vivado's non-project DFX flow (UG909, UG947).
# Sourced by build.tcl after settings.tcl (generated from the platform manifest) and bd.tcl.
# Outputs, under $fs_out: shell.bit + shell.hwh (the overlay pynq loads: every slot empty),
# bit/<registry name>.bit/.bin per (slot, module), and each module's relocatable name
# (bit/<module>.bit/.bin: the partial of the first slot of its shape).
# Not run by the project's CI (no Vivado there); tests/test_vivado_flow.py replays it with
# Vivado's commands recorded.

set fs_out [file normalize $fs_out]
foreach d {dcp bit reports bd} { file mkdir [file join $fs_out $d] }

# The partition cell of slot k (the black box fpgashare_rm inside the board's rp_slot).
proc fs_slot_cell {k} {
    foreach cell [get_cells -hierarchical -filter {REF_NAME == fpgashare_rm || ORIG_REF_NAME == fpgashare_rm}] {
        if {[string first "g_slot\[$k\].u_slot/u_rm" $cell] >= 0} { return $cell }
    }
    error "fpgashare: no partition cell for slot $k"
}

# Pblocks from the floorplan: one per slot, reset after reconfiguration, routing kept inside so
# that partials of slots of one shape match frame for frame.
proc fs_pblocks {} {
    global fs_slots fs_pblock_ranges
    foreach slot $fs_slots {
        lassign $slot name index pblock
        set cell [fs_slot_cell $index]
        create_pblock $pblock
        resize_pblock [get_pblocks $pblock] -add [dict get $fs_pblock_ranges $index]
        add_cells_to_pblock [get_pblocks $pblock] [get_cells $cell]
        set_property SNAPPING_MODE ON [get_pblocks $pblock]
        set_property RESET_AFTER_RECONFIG 1 [get_pblocks $pblock]
        set_property CONTAIN_ROUTING 1 [get_pblocks $pblock]
        set_property EXCLUDE_PLACEMENT 1 [get_pblocks $pblock]
    }
}

proc fs_read_sources {files} {
    foreach f $files {
        if {[file extension $f] eq ".v"} { read_verilog $f } else { read_verilog -sv $f }
    }
}

# ---- 1. block design and static shell (partitions as black boxes)
create_project -force fpgashare_bd [file join $fs_out bd] -part $fs_part
set_property board_part $fs_board_part [current_project]
set_property target_language Verilog [current_project]
add_files $fs_static_sources
set_property include_dirs $fs_include_dirs [current_fileset]
update_compile_order -fileset sources_1
fs_create_bd
set bd_file [get_files $fs_bd.bd]
set_property synth_checkpoint_mode None $bd_file
generate_target all $bd_file
add_files [make_wrapper -files $bd_file -top]
set hwh [get_files -all -of_objects $bd_file -filter {FILE_TYPE == "Hardware Handoff"}]
file copy -force [lindex $hwh 0] [file join $fs_out shell.hwh]
synth_design -top ${fs_bd}_wrapper -part $fs_part -include_dirs $fs_include_dirs
write_checkpoint -force [file join $fs_out dcp static_synth.dcp]
close_project

# ---- 2. every module out of context, as the partition's module fpgashare_rm
foreach module $fs_modules {
    create_project -in_memory -part $fs_part
    fs_read_sources [dict get $fs_rm_sources $module]
    synth_design -mode out_of_context -top fpgashare_rm -part $fs_part -include_dirs $fs_include_dirs
    report_utilization -file [file join $fs_out reports rm_$module.utilization.rpt]
    write_checkpoint -force [file join $fs_out dcp rm_$module.dcp]
    close_project
}

# ---- 3. one configuration per module: the module in every slot that may hold it, the other
# slots empty (buffered ports). The first configuration places the static region; it is locked
# and every later configuration reuses it.
proc fs_config {module first} {
    global fs_out fs_slots fs_module_slots fs_partials fs_relocatable
    set allowed [dict get $fs_module_slots $module]
    if {$first} {
        open_checkpoint [file join $fs_out dcp static_synth.dcp]
    } else {
        open_checkpoint [file join $fs_out dcp static_routed.dcp]
    }
    foreach slot $fs_slots {
        lassign $slot name index pblock
        set cell [fs_slot_cell $index]
        if {[lsearch -exact $allowed $index] >= 0} {
            read_checkpoint -cell $cell [file join $fs_out dcp rm_$module.dcp]
        } else {
            update_design -cell $cell -buffer_ports
        }
        if {$first} { set_property HD.RECONFIGURABLE 1 [get_cells $cell] }
    }
    if {$first} { fs_pblocks }
    opt_design
    place_design
    route_design
    write_checkpoint -force [file join $fs_out dcp config_$module.dcp]
    report_utilization -file [file join $fs_out reports config_$module.utilization.rpt]
    foreach index $allowed {
        set name [dict get $fs_partials [list $index $module]]
        write_bitstream -force -cell [fs_slot_cell $index] -bin_file [file join $fs_out bit $name.bit]
        if {[dict exists $fs_relocatable [list $index $module]]} {
            set moved [dict get $fs_relocatable [list $index $module]]
            write_bitstream -force -cell [fs_slot_cell $index] -bin_file [file join $fs_out bit $moved.bit]
        }
    }
    if {$first} {
        foreach slot $fs_slots {
            update_design -cell [fs_slot_cell [lindex $slot 1]] -black_box
        }
        lock_design -level routing
        write_checkpoint -force [file join $fs_out dcp static_routed.dcp]
    }
    close_design
}

set first 1
foreach module $fs_modules {
    fs_config $module $first
    set first 0
}

# ---- 4. the shell overlay: static region with every slot empty
open_checkpoint [file join $fs_out dcp static_routed.dcp]
foreach slot $fs_slots {
    update_design -cell [fs_slot_cell [lindex $slot 1]] -buffer_ports
}
place_design
route_design
write_checkpoint -force [file join $fs_out dcp config_empty.dcp]
write_bitstream -force -no_partial_bitfile -bin_file [file join $fs_out shell.bit]
close_design

# ---- 5. every configuration must agree with the locked static region
set configs {}
foreach module $fs_modules { lappend configs [file join $fs_out dcp config_$module.dcp] }
pr_verify -initial [file join $fs_out dcp config_empty.dcp] -additional $configs \
    -file [file join $fs_out reports pr_verify.rpt]
puts "fpgashare: shell.bit, shell.hwh and [dict size $fs_partials] partial bitstreams in $fs_out"
