# gui_probe.tcl -- measures, from outside the GUI's own code, what lns_gui drew (issue 36):
# sourced by test_gui.sh through lns_gui --script, after the script has set probe(out).
#   probe_rows      pairs of items in the transfer view's depot rows whose boxes overlap (the
#                   row text, the in-flight boxes, the "Mbit/s mean" text, the graph's frame),
#                   measured after every line of the stream: probe(rows_max)
#   probe_labels    the map's labels (the depots' and the client's): how many are more than
#                   4 px from their own marker, overlap another label, or lie on a marker
#   click_depot K   a real mouse click at the centre of depot K's disc (gui_click.tcl)
# At the stream's end (stream_done), before the selftest dump, probe(at_end) runs and the
# results go to probe(out), one "key value" line each.
source [file join [file dirname [info script]] gui_click.tcl]
set probe(rows_max) 0
set probe(at_end) {}

proc probe_box_overlap {a b} {
    lassign $a ax0 ay0 ax1 ay1
    lassign $b bx0 by0 bx1 by1
    expr {$ax0 < $bx1 && $bx0 < $ax1 && $ay0 < $by1 && $by0 < $ay1}
}
# the gap in pixels between two boxes (0 when they touch or overlap)
proc probe_box_gap {a b} {
    lassign $a ax0 ay0 ax1 ay1
    lassign $b bx0 by0 bx1 by1
    expr {max(0, $bx0 - $ax1, $ax0 - $bx1, $by0 - $ay1, $ay0 - $by1)}
}
proc probe_union {items} {
    set u {}
    foreach it $items {
        set b [.map bbox $it]
        if {$b eq ""} continue
        if {$u eq ""} { set u $b; continue }
        lassign $u x0 y0 x1 y1
        lassign $b a0 b0 a1 b1
        set u [list [expr {min($x0, $a0)}] [expr {min($y0, $b0)}] [expr {max($x1, $a1)}] [expr {max($y1, $b1)}]]
    }
    return $u
}

proc probe_rows {} {
    graphs
    set items {}
    foreach it [.xfer find all] {
        set t [.xfer gettags $it]
        if {"tline" in $t} continue
        if {"row" in $t || "flight" in $t || "graph" in $t} { lappend items $it }
    }
    set n 0
    foreach a $items {
        foreach b $items {
            if {$b > $a && [probe_box_overlap [.xfer bbox $a] [.xfer bbox $b]]} { incr n }
        }
    }
    return $n
}

proc probe_labels {} {
    # each label with the items of its own marker: a depot's disc and gauge, the client's square
    set labels {}
    foreach it [.map find withtag dlabel] {
        set k [lsearch -inline [.map gettags $it] d=*]
        set own {}
        foreach o [.map find withtag $k] { if {"dlabel" ni [.map gettags $o]} { lappend own $o } }
        lappend labels $it $own
    }
    set csq {}; set ctx {}
    foreach it [.map find withtag client] {
        if {[.map type $it] eq "text"} { set ctx $it } else { lappend csq $it }
    }
    if {$ctx ne ""} { lappend labels $ctx $csq }
    set markers [concat [.map find withtag depot] [.map find withtag gauge] $csq]
    set far 0; set ovl 0; set ondot 0; set worst 0
    foreach {l own} $labels {
        set lb [.map bbox $l]
        set g [probe_box_gap $lb [probe_union $own]]
        set worst [expr {max($worst, $g)}]
        if {$g > 4} { incr far }
        foreach m $markers { if {[probe_box_overlap $lb [.map bbox $m]]} { incr ondot } }
        foreach {o -} $labels { if {$o > $l && [probe_box_overlap $lb [.map bbox $o]]} { incr ovl } }
    }
    list $far $ovl $ondot [expr {int($worst)}]
}


rename on_line probe_on_line
proc on_line {line} {
    set r [probe_on_line $line]
    set ::probe(rows_max) [expr {max($::probe(rows_max), [probe_rows])}]
    return $r
}
rename stream_done probe_stream_done
proc stream_done {} {
    uplevel #0 $::probe(at_end)
    lassign [probe_labels] far ovl ondot worst
    set f [open $::probe(out) w]
    puts $f "rows_max $::probe(rows_max)"
    puts $f "rows_end [probe_rows]"
    puts $f "labels_far $far"
    puts $f "labels_overlap $ovl"
    puts $f "labels_on_marker $ondot"
    puts $f "labels_worst_gap $worst"
    puts $f "selected [llength [panel_selected]]"
    puts $f "side_title [.side.title cget -text]"
    close $f
    probe_stream_done
}
