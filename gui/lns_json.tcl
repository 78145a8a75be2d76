# lns_json.tcl -- the JSON reader of lns_gui: objects become dicts, arrays lists, null the
# string "null".  Enough for the L-Bone's answers (docs/lbone-api.md); Tcl 8.6 has no JSON
# reader built in and the GUI should need nothing beyond Tk (no tcllib).
# Key idea: recursive descent with the position passed by name (upvar); a syntax error is a
# Tcl error naming the position, which the callers turn into their one-line message.
proc json_parse {s} {
    set pos 0
    set v [json_value $s pos]
    return $v
}
proc json_ws {s vpos} { upvar $vpos pos; while {[string is space [string index $s $pos]] && $pos < [string length $s]} { incr pos } }
proc json_value {s vpos} {
    upvar $vpos pos
    json_ws $s pos
    set c [string index $s $pos]
    switch -- $c {
        "\{" {
            incr pos; set d [dict create]
            json_ws $s pos
            if {[string index $s $pos] eq "\}"} { incr pos; return $d }
            while 1 {
                json_ws $s pos
                set k [json_value $s pos]
                json_ws $s pos
                if {[string index $s $pos] ne ":"} { error "JSON: ':' expected at $pos" }
                incr pos
                dict set d $k [json_value $s pos]
                json_ws $s pos
                set c [string index $s $pos]; incr pos
                if {$c eq "\}"} { return $d }
                if {$c ne ","} { error "JSON: ',' or '\}' expected at $pos" }
            }
        }
        "\[" {
            incr pos; set l {}
            json_ws $s pos
            if {[string index $s $pos] eq "\]"} { incr pos; return $l }
            while 1 {
                lappend l [json_value $s pos]
                json_ws $s pos
                set c [string index $s $pos]; incr pos
                if {$c eq "\]"} { return $l }
                if {$c ne ","} { error "JSON: ',' or '\]' expected at $pos" }
            }
        }
        "\"" {
            incr pos; set out ""
            while {$pos < [string length $s]} {
                set c [string index $s $pos]; incr pos
                if {$c eq "\""} { return $out }
                if {$c eq "\\"} {
                    set e [string index $s $pos]; incr pos
                    switch -- $e {
                        n { append out \n } t { append out \t } r { append out \r }
                        b { append out \b } f { append out \f }
                        u { append out [format %c 0x[string range $s $pos [expr {$pos+3}]]]; incr pos 4 }
                        default { append out $e }
                    }
                } else { append out $c }
            }
            error "JSON: unterminated string"
        }
        default {
            if {[regexp {\A(-?[0-9.eE+-]+|true|false|null)} [string range $s $pos end] m]} {
                incr pos [string length $m]
                return $m
            }
            error "JSON: unexpected '$c' at $pos"
        }
    }
}
