# lns_gui_panels.tcl -- the task panels of lns_gui: upload a file, augment, trim, refresh,
# download to a file, play through lors_play.  Sourced by lns_gui (next to it, or from
# $(PREFIX)/share/lns).
#
# Play goes through lors_play --start (a private lors_serve, so the player can seek): a seek
# bar over the file's duration (ffprobe on a short-lived lors_serve's URL) chooses where, and
# moving it while the player plays stops that run and starts one at the new position.
#
# Key ideas: a panel only builds the argv of the real tool, as a Tcl list, so a file name
# is never quoted for a shell; the tool runs with its event stream on fd 3, which a tiny
# `sh -c 'exec "$@" 3>&1 >/dev/null'` turns into the pipe the GUI reads (the tool's own
# stdout, and a player's under lors_play, go nowhere), and the stream feeds the same
# transfer view as --run and --events.  What the status line says comes from the stream's
# END, the exit code and the first line the tool wrote on stderr (its one-line error):
# never from the tools' human output.  Trim and refresh draw the network file's mappings
# from their stream (MAPPING, then TRIM or REFRESH per mapping acted on; see the end).

# pv(...): the panels' fields.  pv(depots) is the depot selection shared by the panels,
# "host:port,..." as --depot-list takes it; clicking a marker adds or removes its depot,
# and a ring on the map shows every selected depot.
array set pv {
    file "" depots "" place "" copies 1 frags 4 bs "" dur 1d out ""
    aug_xnd "" aug_copies 1
    trim_xnd "" trim_by depot trim_maps "" trim_free 0
    ref_xnd "" ref_how "from now" ref_dur 1d
    dl_xnd "" dl_out "" dl_threads ""
    play_xnd "" player mpv headless 0 bitrate "" play_pos 0 play_dur "" play_text "" play_from ""
}
set run(tool) ""; set run(rc) ""; set run(err) ""; set run(busy) 0; set run(name) ""
set run(restart) 0; set run(restarts) 0; set run(seeking) 0

# ---------------------------------------------------------------- layout
grid .side -rowspan 1
.side.info configure -height 8
ttk::notebook .tasks
grid .tasks -row 2 -column 1 -sticky nsew

# A labelled entry on row ROW of W; BROWSE (open or save) adds a file chooser.
proc pfield {w row label var {browse ""}} {
    label $w.l$row -text $label -anchor w
    entry $w.e$row -textvariable $var -width 14
    grid $w.l$row -row $row -column 0 -sticky w
    grid $w.e$row -row $row -column 1 -sticky ew
    if {$browse ne ""} {
        button $w.b$row -text "..." -padx 1 -pady 0 -command [list pbrowse $browse $var]
        grid $w.b$row -row $row -column 2
    }
}
proc pbrowse {how var} {
    set f [expr {$how eq "open" ? [tk_getOpenFile] : [tk_getSaveFile]}]
    if {$f ne ""} { set ::$var $f }
}
proc ppanel {name title} {
    set w .tasks.$name
    frame $w -padx 4 -pady 2
    .tasks add $w -text $title
    grid columnconfigure $w 1 -weight 1
    return $w
}
# The place field, with the button that selects the depots matching it.
proc pplace {w row} {
    pfield $w $row "place" pv(place)
    button $w.pick -text "pick" -padx 1 -pady 0 -command panel_pick_place
    grid $w.pick -row $row -column 2
}
proc prun {w row name} {
    button $w.run -text "Run" -command [list panel_run $name]
    grid $w.run -row $row -column 1 -sticky e -pady 2
}

set w [ppanel upload Upload]
pfield $w 0 "file" pv(file) open
pfield $w 1 "depots" pv(depots)
pplace $w 2
pfield $w 3 "copies" pv(copies)
pfield $w 4 "fragments" pv(frags)
pfield $w 5 "block size" pv(bs)
pfield $w 6 "duration" pv(dur)
pfield $w 7 "exNode out" pv(out) save
prun $w 8 upload

set w [ppanel augment Augment]
pfield $w 0 "exNode" pv(aug_xnd) open
pfield $w 1 "depots" pv(depots)
pplace $w 2
pfield $w 3 "copies" pv(aug_copies)
prun $w 4 augment

set w [ppanel trim Trim]
pfield $w 0 "exNode" pv(trim_xnd) open
radiobutton $w.r1 -text "the selected depots" -variable pv(trim_by) -value depot
radiobutton $w.r2 -text "mapping numbers:" -variable pv(trim_by) -value maps
grid $w.r1 -row 1 -column 0 -columnspan 2 -sticky w
grid $w.r2 -row 2 -column 0 -sticky w
entry $w.maps -textvariable pv(trim_maps) -width 12
grid $w.maps -row 2 -column 1 -sticky ew
pfield $w 3 "depots" pv(depots)
checkbutton $w.free -text "also free the storage (-d)" -variable pv(trim_free)
grid $w.free -row 4 -column 0 -columnspan 2 -sticky w
prun $w 5 trim

set w [ppanel refresh Refresh]
pfield $w 0 "exNode" pv(ref_xnd) open
label $w.hl -text "expiry" -anchor w
tk_optionMenu $w.how pv(ref_how) "from now" "extend by" "max"
grid $w.hl -row 1 -column 0 -sticky w
grid $w.how -row 1 -column 1 -sticky w
pfield $w 2 "duration" pv(ref_dur)
prun $w 3 refresh

set w [ppanel download Download]
pfield $w 0 "exNode" pv(dl_xnd) open
pfield $w 1 "to file" pv(dl_out) save
pfield $w 2 "streams" pv(dl_threads)
prun $w 3 download

set w [ppanel play Play]
pfield $w 0 "exNode" pv(play_xnd) open
label $w.pl -text "player" -anchor w
tk_optionMenu $w.player pv(player) mpv mplayer vlc paced
grid $w.pl -row 1 -column 0 -sticky w
grid $w.player -row 1 -column 1 -sticky w
checkbutton $w.hd -text "--headless" -variable pv(headless)
grid $w.hd -row 2 -column 1 -sticky w
pfield $w 3 "bitrate" pv(bitrate)
label $w.sl -text "from" -anchor w
scale $w.seek -orient horizontal -from 0 -to 100 -resolution 1 -showvalue 0 -variable pv(play_pos) \
    -command play_seek_moved -state disabled
label $w.st -textvariable pv(play_text) -anchor w -font TkSmallCaptionFont
grid $w.sl -row 4 -column 0 -sticky w
grid $w.seek -row 4 -column 1 -columnspan 2 -sticky ew
grid $w.st -row 5 -column 1 -columnspan 2 -sticky w
prun $w 6 play
unset w
set pv(play_text) "no exNode"

# ---------------------------------------------------------------- depot selection
proc panel_selected {} {
    set l {}
    foreach d [split $::pv(depots) ", "] { if {$d ne ""} { lappend l $d } }
    return $l
}
# The ring around a selected marker; lns_gui's draw_depot calls it after each marker.
proc panel_ring {key} {
    .map delete "ring=$key"
    if {[lsearch -exact [panel_selected] $key] < 0 || $::depot($key,lat) eq ""} return
    lassign [px $::depot($key,lon) $::depot($key,lat)] x y
    .map create oval [expr {$x-12}] [expr {$y-12}] [expr {$x+12}] [expr {$y+12}] \
        -outline black -width 2 -tags [list ring "ring=$key"]
    # under the disc and its label: the ring passes by the label, it must not cross it out
    .map lower "ring=$key" "d=$key"
}
proc panel_rings {args} { foreach d $::depots { panel_ring $d } }
trace add variable pv(depots) write panel_rings
# A click on a marker adds its depot to the selection, or removes it.
proc panel_toggle {key} {
    set l [panel_selected]
    set i [lsearch -exact $l $key]
    set l [expr {$i < 0 ? [linsert $l end $key] : [lreplace $l $i $i]}]
    set ::pv(depots) [join $l ,]
}
proc panel_click {} {
    set k [string range [lsearch -inline [.map gettags current] d=*] 2 end]
    if {$k ne ""} { panel_toggle $k }
}
.map bind depot <Button-1> {+panel_click}
# The depots whose place or name holds the place field's text (any case; the text is
# plain, not a pattern).
proc panel_match {place} {
    set l {}
    set p [string tolower [string trim $place]]
    foreach d $::depots {
        if {[string first $p [string tolower "$d $::depot($d,place)"]] >= 0} { lappend l $d }
    }
    return $l
}
proc panel_pick_place {} {
    set m [panel_match $::pv(place)]
    set ::pv(depots) [join $m ,]
    set ::status "place \"$::pv(place)\": [llength $m] depots"
}
# Where new copies go: the selected depots; else, with --lbone, the L-Bone's choice (near the
# place: -H -l); else the depots matching the place; else the tool's own (its rc file).
proc panel_where {} {
    set sel [panel_selected]
    if {$sel ne ""} { return [list --depot-list [join $sel ,]] }
    if {$::pv(place) eq ""} {
        return [expr {$::opt(lbone) ne "" ? [list -H $::opt(lbone)] : {}}]
    }
    if {$::opt(lbone) ne ""} { return [list -H $::opt(lbone) -l $::pv(place)] }
    set m [panel_match $::pv(place)]
    if {$m eq ""} { error "no depot's place or name matches \"$::pv(place)\"" }
    return [list --depot-list [join $m ,]]
}

# ---------------------------------------------------------------- running the tools
# The program NAME: in --bindir, else next to lns_gui, else on the PATH.
proc tool_path {name} {
    set dir [expr {$::opt(bindir) ne "" ? $::opt(bindir) : [file dirname [file normalize $::argv0]]}]
    if {[file executable [file join $dir $name]]} { return [file join $dir $name] }
    set p [auto_execok $name]
    return [expr {$p ne "" ? [lindex $p 0] : $name}]
}
# Add OPT VALUE to the list in ARGVAR when VALUE is not empty.
proc popt {argvar opt value} {
    upvar $argvar a
    if {[string trim $value] ne ""} { lappend a $opt [string trim $value] }
}
proc need {value what} {
    if {[string trim $value] eq ""} { error "$what is empty" }
    return [string trim $value]
}
# Ask QUESTION, yes or no: 1 for yes.  A proc of its own so that a --script can answer.
proc panel_confirm {question} {
    expr {[tk_messageBox -parent . -type yesno -icon warning -default no -title "lns_gui" \
        -message $question] eq "yes"}
}
# An exNode is the only handle on its storage: the tools refuse to overwrite one, so before
# a run that would, ask, and pass --force only on a yes (else the panel refuses to run).
proc panel_overwrite {argvar path} {
    upvar $argvar a
    if {$path eq "-" || ![file exists $path]} { return }
    if {![panel_confirm "$path exists.\n\nOverwrite it?  The exNode there may be the only\
            handle on its storage; once overwritten, that storage can only expire."]} {
        error "not overwriting $path"
    }
    lappend a --force
}
# The argv of panel NAME's tool (every one writes an event stream).
proc panel_argv {name} {
    global pv
    switch -- $name {
        upload {
            set a [list lors_upload -q -f [need $pv(file) "the file"]]
            popt a -o $pv(out); popt a -c $pv(copies); popt a -F $pv(frags)
            popt a -bs $pv(bs); popt a -d $pv(dur)
            set out [string trim $pv(out)]
            panel_overwrite a [expr {$out ne "" ? $out : "[string trim $pv(file)].xnd"}]
            return [concat $a [panel_where]]
        }
        augment {
            set a [list lors_augment -q -f [need $pv(aug_xnd) "the exNode"]]
            popt a -c $pv(aug_copies)
            return [concat $a [panel_where]]
        }
        trim {
            set a [list lors_trim -f [need $pv(trim_xnd) "the exNode"]]
            if {$pv(trim_by) eq "maps"} {
                lappend a -m [need $pv(trim_maps) "the mapping list"]
            } else {
                set sel [panel_selected]
                if {$sel eq ""} { error "no depot selected: click the depots to trim on the map" }
                foreach d $sel { lappend a --depot $d }
            }
            if {$pv(trim_free)} { lappend a -d }
            return $a
        }
        refresh {
            set a [list lors_refresh -f [need $pv(ref_xnd) "the exNode"]]
            switch -- $pv(ref_how) {
                "from now" { lappend a -s [need $pv(ref_dur) "the duration"] }
                "extend by" { lappend a -d [need $pv(ref_dur) "the duration"] }
                default { lappend a -m }
            }
            return $a
        }
        download {
            set a [list lors_download --quiet -f [need $pv(dl_xnd) "the exNode"] \
                -o [need $pv(dl_out) "the output file"]]
            popt a -t $pv(dl_threads)
            return $a
        }
        play {
            set a [list lors_play --quiet -f [need $pv(play_xnd) "the exNode"] -P $pv(player)]
            if {$pv(headless)} { lappend a --headless }
            popt a -b $pv(bitrate)
            # through the gateway from the seek bar's position; lns_paced reads a pipe
            if {$pv(player) ne "paced"} {
                set pv(play_from) [expr {$pv(play_dur) ne "" ? int($pv(play_pos)) : 0}]
                set ::run(seeking) 0
                lappend a --start $pv(play_from)
            }
            return $a
        }
    }
    error "no panel $name"
}
# A panel's Run button: build the argv, start the tool, feed its stream to the view.
proc panel_run {name} {
    global run status
    # one stream at a time: a panel's tool, --run's or a replay (the view and rch are one)
    if {$run(busy) || $::replay(busy) || ([info exists ::rch] && $::rch in [chan names])} {
        set status "$name: wait until the current transfer has ended"; return
    }
    if {[catch {panel_argv $name} argv]} { panel_refused "$name: $argv"; return }
    lset argv 0 [tool_path [lindex $argv 0]]
    lappend argv --events fd:3
    set run(tool) [file tail [lindex $argv 0]]; set run(argv) $argv
    set run(rc) ""; set run(err) ""
    close [file tempfile run(errfile) lns_gui.err]
    xfer_reset
    .xfer create text 20 10 -anchor w -text "$name: [lrange $argv 1 end]" -tags title
    set e [run_start [list sh -c {exec "$@" 3>&1 >/dev/null} lns_gui {*}$argv] $run(errfile)]
    if {$e ne ""} {
        file delete $run(errfile)
        panel_refused "$name: cannot run $run(tool): $e"; return
    }
    set run(busy) 1; set run(name) $name
    set ::run_done [list panel_done $name]
    set status "$name: $run(tool) running"
    if {$name eq "play"} { play_tick [clock milliseconds] }
}
proc panel_refused {msg} {
    set ::status $msg
    set ::run(err) $msg
    if {$::opt(selftest) ne ""} { after 300 selftest }
}
# The tool has exited with RC: its exit code and its error line on the status line.
proc panel_done {name rc} {
    global run status st
    set run(busy) 0; set run(rc) $rc; set run(name) ""
    if {![catch {open $run(errfile)} ch]} {
        while {[gets $ch line] >= 0} { if {[string trim $line] ne ""} { set run(err) $line; break } }
        close $ch
    }
    file delete $run(errfile)
    if {$run(restart)} {
        # the seek bar moved while the player played: play again from there
        set run(restart) 0; incr run(restarts)
        set status "Seeking to [fmt_pos $::pv(play_pos)]"
        set ::run_again 1
        after idle {unset -nocomplain ::run_again; panel_run play}
    } elseif {$st(stopped)} {
        set status "Stopped $name ($run(tool) ended by SIGTERM, exit $rc)"
    } elseif {$rc ne "0"} {
        set status "$name failed (exit $rc)[expr {$run(err) ne "" ? ": $run(err)" : ""}]"
    } elseif {[dict exists $st(endf) underruns]} {
        append status ", underruns [dict get $st(endf) underruns]"
    }
}
# Lines for the --selftest dump: the last run and the selection.
proc panels_selftest {} {
    global run st
    set o "run_tool [expr {$run(tool) eq "" ? "-" : $run(tool)}]\n"
    append o "run_rc [expr {$run(rc) eq "" ? "-" : [string map {" " _} $run(rc)]}]\n"
    append o "run_args [expr {$run(tool) eq "" ? "-" : [string map {" " _} [lrange $run(argv) 1 end]]}]\n"
    append o "run_err [expr {$run(err) eq "" ? "-" : [string map {" " _} $run(err)]}]\n"
    set e {}
    if {$st(endf) ne ""} { dict for {k v} $st(endf) { lappend e $k=$v } }
    append o "end [expr {$e eq "" ? "-" : [join $e " "]}]\n"
    append o "selected [llength [panel_selected]]\n"
    append o "rings [llength [.map find withtag ring]]\n"
    append o "tab [.tasks tab current -text]\n"
    append o "play_dur [expr {$::pv(play_dur) eq "" ? "-" : $::pv(play_dur)}]\n"
    append o "play_seek [.tasks.play.seek cget -state] [.tasks.play.seek cget -to]\n"
    append o "play_from [expr {$::pv(play_from) eq "" ? "-" : $::pv(play_from)}]\n"
    append o "restarts $run(restarts)\n"
    foreach t {mbox removed unfreed refreshed mfailed} {
        append o "$t [llength [.xfer find withtag $t]]\n"
    }
    append o "expiry [expr {$::mv(first) eq "" ? "-" : "$::mv(first) $::mv(last)"}]\n"
    return $o
}

# ---------------------------------------------------------------- trim and refresh view
# The stream lists the exNode first (MAPPING, copy 0 first): each mapping is a box over its
# bytes, in the first copy row where it overlaps no box yet -- the rows of an upload's
# copies -- outlined in its depot's colour (for a trim also filled: stored).  TRIM turns a box to the removed style (grey,
# dashed, crossed; the cross red when its storage could not be freed); REFRESH fills it
# with the depot's colour after a flash; FAILURE outlines it red and dashed.  mv(rows) holds
# each row's {off end} intervals; mv(first) and mv(last) the earliest and latest new
# expiry a REFRESH gave; mv(freed) the TRIMs whose storage was freed.
array set mv {rows {} first "" last "" freed 0}
proc mapping_event {kind f d} {
    global st mv
    set k [dict get $f copy]; set tag "m=$k"
    set colour [expr {$d ne "" ? $::depot($d,colour) : "black"}]
    switch -- $kind {
        MAPPING {
            if {$k == 0} { array set mv {rows {} first "" last "" freed 0} }
            set a [dict get $f off]; set b [expr {$a + [dict get $f len]}]
            for {set r 0} {$r < [llength $mv(rows)]} {incr r} {
                set free 1
                foreach iv [lindex $mv(rows) $r] {
                    if {$a < [lindex $iv 1] && [lindex $iv 0] < $b} { set free 0; break }
                }
                if {$free} break
            }
            if {$r == [llength $mv(rows)]} {
                lappend mv(rows) {}
                .xfer create text 54 [expr {50 + 22 * $r + 7}] -anchor e -text "copy $r" \
                    -font TkSmallCaptionFont -tags rowlabel
                set st(rows) [llength $mv(rows)]
            }
            lset mv(rows) $r [linsert [lindex $mv(rows) $r] end [list $a $b]]
            if {$st(size) > 0} {
                set x0 [bx $a]; set x1 [expr {[bx $b] - 2}]
            } else { set x0 [expr {60 + 24 * $k}]; set x1 [expr {$x0 + 20}] }
            set y [expr {50 + 22 * $r}]
            # a trim starts from the stored copies; a refresh fills a box once it is extended
            .xfer create rectangle $x0 $y $x1 [expr {$y + 14}] -outline $colour -width 2 \
                -fill [expr {$st(op) eq "trim" ? $colour : ""}] -tags [list mbox $tag]
        }
        TRIM {
            .xfer itemconfigure $tag -fill #eeeeee -outline #999999 -dash {2 2}
            .xfer addtag removed withtag $tag
            set freed [expr {[dict exists $f freed] ? [dict get $f freed] : ""}]
            set unfreed [expr {$freed eq "0"}]
            if {$unfreed} { .xfer addtag unfreed withtag $tag }
            if {$freed eq "1"} { incr mv(freed) }
            lassign [.xfer coords $tag] x0 y0 x1 y1
            if {$x0 ne ""} {
                .xfer create line $x0 $y0 $x1 $y1 -fill [expr {$unfreed ? "red" : "#999999"}] -tags cross
            }
        }
        REFRESH {
            .xfer itemconfigure $tag -fill $colour -outline yellow -width 4
            .xfer addtag refreshed withtag $tag
            after 300 [list .xfer itemconfigure $tag -outline black -width 2]
            set e [expr {[dict exists $f new_end] ? [dict get $f new_end] : ""}]
            if {[string is integer -strict $e]} {
                if {$mv(first) eq "" || $e < $mv(first)} { set mv(first) $e }
                if {$mv(last) eq "" || $e > $mv(last)} { set mv(last) $e }
            }
        }
        FAILURE {
            .xfer itemconfigure $tag -outline red -dash {2 2}
            .xfer addtag mfailed withtag $tag
        }
    }
}
# The status line at a trim's or refresh's END: what was done, and the new expiry.
proc mapping_status {f} {
    global st mv
    set n [llength [.xfer find withtag mbox]]
    set rc [dict get $f rc]
    if {$st(op) eq "trim"} {
        set s "trim done: [llength [.xfer find withtag removed]] of $n mappings removed"
        set nu [llength [.xfer find withtag unfreed]]
        if {$mv(freed) || $nu} { append s " ($mv(freed) freed[expr {$nu ? ", $nu not" : ""}])" }
        return "$s, rc $rc"
    }
    set s "refresh done: [llength [.xfer find withtag refreshed]] of $n mappings extended"
    if {$mv(first) ne ""} {
        set fmt {%Y-%m-%d %H:%M:%S}
        append s ", expiry [clock format $mv(first) -format $fmt -gmt 1]"
        if {$mv(last) != $mv(first)} { append s " to [clock format $mv(last) -format $fmt -gmt 1]" }
        append s " UTC"
    }
    set nf [llength [.xfer find withtag mfailed]]
    if {$nf} { append s ", $nf failed" }
    return "$s, rc $rc"
}

# ---------------------------------------------------------------- the play panel's seek bar
# The duration: a lors_serve of the GUI's own (port 0) serves the exNode for a moment, and
# ffprobe reads the container's duration from its URL (the same Range requests a player
# makes).  Without ffprobe, the file's size (HEAD) over the bitrate field is an estimate;
# without either the bar stays disabled and Play starts at 0.
trace add variable pv(play_xnd) write play_probe_later
proc play_probe_later {args} {
    after cancel play_probe
    after 300 play_probe
}
# The URL path of an exNode's served name (lors_serve: the file name without .xnd).
proc play_url_name {path} {
    set n [file tail $path]
    if {[string match *.xnd $n] && [string length $n] > 4} { set n [string range $n 0 end-4] }
    set o ""
    foreach b [split [encoding convertto utf-8 $n] ""] {
        if {[regexp {[A-Za-z0-9._~-]} $b]} { append o $b } else { append o [format %%%02X [scan $b %c]] }
    }
    return $o
}
# The duration probe's lors_serve, if one runs, stopped and its directory removed: for the
# GUI's exit, which may come while a probe waits (http::geturl runs the event loop).
set ::probe_serve ""
set ::probe_dir ""
proc play_probe_stop {} {
    if {[info exists ::probe_serve] && [string is integer -strict $::probe_serve]} {
        catch {exec kill $::probe_serve}
    }
    if {[info exists ::probe_dir] && $::probe_dir ne ""} { file delete -force $::probe_dir }
    set ::probe_serve ""
    set ::probe_dir ""
}
proc play_probe {} {
    global pv
    set x [string trim $pv(play_xnd)]
    set pv(play_dur) ""
    .tasks.play.seek configure -state disabled
    if {$x eq "" || ![file readable $x]} { set pv(play_text) "no exNode"; return }
    set dir [file join [expr {[info exists ::env(TMPDIR)] ? $::env(TMPDIR) : "/tmp"}] \
        lns_gui-probe-[pid]-[clock clicks]]
    file mkdir $dir
    set ::probe_dir $dir
    set sp ""
    set pv(play_text) "reading the duration ..."
    update idletasks
    if {![catch {exec [tool_path lors_serve] -q -p 0 --port-file $dir/port $x >& /dev/null &} sp]} {
        set ::probe_serve $sp ;# for gui_quit: the gateway must not outlive the GUI
        for {set i 0} {$i < 250 && ![file exists $dir/port]} {incr i} { after 20 }
    }
    set dur ""; set size ""
    if {[file exists $dir/port] && ![catch {open $dir/port} ch]} {
        set url "http://127.0.0.1:[string trim [read $ch]]/[play_url_name $x]"
        close $ch
        if {[auto_execok ffprobe] ne ""} {
            catch {exec ffprobe -v error -show_entries format=duration -of csv=p=0 $url 2>/dev/null} dur
            set dur [string trim $dur]
        }
        if {![catch {http::geturl $url -validate 1 -timeout 5000} tok]} {
            if {[http::ncode $tok] == 200} { catch {set size [dict get [http::meta $tok] Content-Length]} }
            http::cleanup $tok
        }
    }
    if {$sp ne "" && [string is integer -strict $sp]} { catch {exec kill $sp} }
    file delete -force $dir
    if {$::probe_dir eq $dir} { set ::probe_serve ""; set ::probe_dir "" }
    set how "ffprobe"
    if {![string is double -strict $dur] || $dur <= 0} {
        set dur ""
        set rate [play_rate $pv(bitrate)]
        if {[string is integer -strict $size] && $rate > 0} {
            set dur [expr {$size * 8.0 / $rate}]; set how "size / bitrate"
        }
    }
    if {$dur eq ""} {
        set pv(play_text) "duration unknown (no ffprobe, no bitrate): plays from 0:00"
        return
    }
    set pv(play_dur) [format %.3f $dur]
    set pv(play_pos) 0
    .tasks.play.seek configure -state normal -to [expr {int($dur)}]
    set pv(play_text) "0:00 of [fmt_pos $dur] ($how)"
}
# bit/s of a bitrate field (15M, 800K, 3000000); 0 if it says none.
proc play_rate {v} {
    set v [string trim $v]
    if {![regexp {^([0-9.]+)([KMG]?)$} $v -> n u]} { return 0 }
    expr {$n * [dict get {"" 1 K 1e3 M 1e6 G 1e9} $u]}
}
# The bar moved: the label says where; a playing run is restarted there once the bar has
# rested for 400 ms (a drag is many moves).  The bar's own advance while playing is not a move.
proc play_seek_moved {v} {
    global pv run
    if {[info exists ::play_ticking]} return
    if {$pv(play_dur) ne ""} { set pv(play_text) "[fmt_pos $v] of [fmt_pos $pv(play_dur)]" }
    if {$run(busy) && $run(name) eq "play" && $pv(player) ne "paced"} {
        set run(seeking) 1
        after cancel play_restart
        after 400 play_restart
    }
}
proc play_restart {} {
    global run
    if {!$run(busy) || $run(name) ne "play"} return
    set run(restart) 1
    run_stop
}
# While the player plays, the bar follows it: from where it started, at real time.
proc play_tick {t0} {
    global pv run
    if {!$run(busy) || $run(name) ne "play" || $pv(play_dur) eq "" || $pv(play_from) eq ""} return
    if {!$run(restart) && !$run(seeking)} {
        set now [expr {min($pv(play_dur), $pv(play_from) + ([clock milliseconds] - $t0) / 1000.0)}]
        set ::play_ticking 1
        set pv(play_pos) [expr {int($now)}]
        update idletasks
        unset ::play_ticking
        set pv(play_text) "playing [fmt_pos $now] of [fmt_pos $pv(play_dur)] (from [fmt_pos $pv(play_from)])"
    }
    after 500 [list play_tick $t0]
}
