# gui_click.tcl -- sourced by the scripts test_gui.sh hands to lns_gui --script (and by
# gui_probe.tcl): click_depot K, a real mouse click (pointer moved there first) at the centre
# of depot K's disc on the map.
proc click_depot {k} {
    update
    lassign [.map coords [.map find withtag "d=$k&&depot"]] x0 y0 x1 y1
    set x [expr {int(($x0 + $x1) / 2)}]; set y [expr {int(($y0 + $y1) / 2)}]
    event generate .map <Motion> -x $x -y $y -warp 1
    update
    event generate .map <ButtonPress-1> -x $x -y $y
    event generate .map <ButtonRelease-1> -x $x -y $y
    update
}
