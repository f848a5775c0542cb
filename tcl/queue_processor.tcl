# SkillPilot queue processor: runs inside the tool (tclsh or Innovus) and executes requests that
# the runtime drops into <run_dir>/queue/, answering each in <run_dir>/ack/ (seed §5, §6).
#
# Invariants (why this file looks the way it does):
#  - the tool is driven only through files: queue/<request_id>.json in, ack/<request_id>.json out;
#  - a request is claimed by renaming it before it runs, so it runs at most once;
#  - an ack is written to a temp file in ack/ and published with a hard link, which fails when an
#    ack already exists, so each request gets exactly one ack;
#  - only scripts under <run_dir>/scripts/ are sourced, after every symlink on the way has been
#    resolved (component by component) and the real path checked against the real scripts/ dir;
#  - user scripts cannot end the session (`exit` is trapped) nor re-enter the processor (busy flag
#    against scripts that call `update`), and the working directory is restored after each script
#    (restore_wrapper.tcl cds into the design directory, seed §6.2);
#  - session/heartbeat holds a counter bumped on a timer of the Tcl event loop. A long command
#    blocks that loop, so the runtime never judges the heartbeat while a request is in flight.
#
# The boot script sets ::skillpilot::run_dir (and optionally poll_ms, heartbeat_ms, runner_pid,
# runner_host)
# before sourcing this file, then calls ::skillpilot::main, which never returns.

namespace eval ::skillpilot {
    variable schema_version 1.0
    foreach {name default} {run_dir "" poll_ms 10 heartbeat_ms 200 runner_pid "" runner_host ""} {
        if {![info exists ::skillpilot::$name]} { variable $name $default }
    }
    variable busy 0
    variable beats 0
    variable last_beat 0
    variable tmpseq 0
    variable forever 0
    variable reports_dir ""
}

namespace eval ::skillpilot::json {
    variable s ""
    variable i 0
    variable n 0
}

# ── a small JSON reader (tclsh 8.6 ships none): objects become dicts, arrays lists ──────────────

proc ::skillpilot::json::parse {text} {
    variable s $text
    variable i 0
    variable n [string length $text]
    ws
    set v [value]
    ws
    if {$i != $n} { error "unexpected trailing text at offset $i" }
    return $v
}

proc ::skillpilot::json::ws {} {
    variable s; variable i; variable n
    while {$i < $n && [string is space [string index $s $i]]} { incr i }
}

proc ::skillpilot::json::value {} {
    variable s; variable i; variable n
    if {$i >= $n} { error "unexpected end of JSON" }
    set c [string index $s $i]
    switch -- $c {
        "\{" { return [object] }
        "\[" { return [array] }
        "\"" { return [str] }
        t { return [literal true 1] }
        f { return [literal false 0] }
        n { return [literal null ""] }
        default {
            if {[regexp -start $i -- {\A-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?} $s num]} {
                incr i [string length $num]
                return $num
            }
            error "unexpected character '$c' at offset $i"
        }
    }
}

proc ::skillpilot::json::literal {word result} {
    variable s; variable i
    if {[string range $s $i [expr {$i + [string length $word] - 1}]] ne $word} {
        error "bad literal at offset $i"
    }
    incr i [string length $word]
    return $result
}

proc ::skillpilot::json::object {} {
    variable s; variable i
    incr i
    set d [dict create]
    ws
    if {[string index $s $i] eq "\}"} { incr i; return $d }
    while 1 {
        ws
        if {[string index $s $i] ne "\""} { error "expected a key at offset $i" }
        set k [str]
        ws
        if {[string index $s $i] ne ":"} { error "expected ':' at offset $i" }
        incr i
        ws
        dict set d $k [value]
        ws
        set c [string index $s $i]
        incr i
        if {$c eq "\}"} { return $d }
        if {$c ne ","} { error "expected ',' or '\}' at offset [expr {$i - 1}]" }
    }
}

proc ::skillpilot::json::array {} {
    variable s; variable i
    incr i
    set l {}
    ws
    if {[string index $s $i] eq "\]"} { incr i; return $l }
    while 1 {
        ws
        lappend l [value]
        ws
        set c [string index $s $i]
        incr i
        if {$c eq "\]"} { return $l }
        if {$c ne ","} { error "expected ',' or '\]' at offset [expr {$i - 1}]" }
    }
}

proc ::skillpilot::json::str {} {
    variable s; variable i; variable n
    incr i
    set out ""
    while {$i < $n} {
        set c [string index $s $i]
        if {$c eq "\""} { incr i; return $out }
        if {$c eq "\\"} {
            set e [string index $s [incr i]]
            switch -- $e {
                "\"" { append out "\"" }
                "\\" { append out "\\" }
                "/" { append out "/" }
                b { append out "\b" }
                f { append out "\f" }
                n { append out "\n" }
                r { append out "\r" }
                t { append out "\t" }
                u {
                    set hex [string range $s [expr {$i + 1}] [expr {$i + 4}]]
                    if {![regexp {^[0-9a-fA-F]{4}$} $hex]} { error "bad \\u escape at offset $i" }
                    append out [format %c [scan $hex %x]]
                    incr i 4
                }
                default { error "bad escape at offset $i" }
            }
            incr i
            continue
        }
        append out $c
        incr i
    }
    error "unterminated string"
}

# ── JSON writing ───────────────────────────────────────────────────────────────────────────────

proc ::skillpilot::json::quote {value} {
    set out "\""
    foreach c [split $value ""] {
        scan $c %c code
        if {$c eq "\""} { append out "\\\"" } elseif {$c eq "\\"} { append out "\\\\" } elseif {$code < 0x20} {
            append out [format "\\u%04x" $code]
        } else { append out $c }
    }
    return "$out\""
}

# ── file helpers ───────────────────────────────────────────────────────────────────────────────

proc ::skillpilot::now_iso {} {
    set ms [clock milliseconds]
    return "[clock format [expr {$ms / 1000}] -format {%Y-%m-%dT%H:%M:%S} -gmt 1].[format %03d [expr {$ms % 1000}]]Z"
}

# Temp names carry the runtime's marker (.tw-tmp-) so every reader skips them.
proc ::skillpilot::temp_for {path} {
    variable tmpseq
    return [file join [file dirname $path] ".[file tail $path].tw-tmp-[pid]-[incr tmpseq]"]
}

proc ::skillpilot::write_raw {path content} {
    set f [open $path {WRONLY CREAT EXCL}]
    fconfigure $f -translation lf -encoding utf-8
    if {[catch {puts -nonewline $f $content; close $f} err]} {
        catch {close $f}
        file delete $path
        error $err
    }
}

proc ::skillpilot::write_atomic {path content} {
    set tmp [temp_for $path]
    write_raw $tmp $content
    if {[catch {file rename -force $tmp $path} err]} {
        file delete $tmp
        error $err
    }
}

proc ::skillpilot::log {message} {
    variable run_dir
    catch {
        set f [open [file join $run_dir session processor.log] a]
        puts $f "[now_iso] $message"
        close $f
    }
}

# ── the security boundary (seed §6.1) ─────────────────────────────────────────────────────────

# realpath(3) in Tcl: walk the components of an absolute path, replacing every symlink met on the
# way by its target, so that no link (a file or any directory above it) can point outside.
proc ::skillpilot::realpath {path} {
    set todo [lrange [file split $path] 1 end]
    set cur /
    set hops 0
    while {[llength $todo] > 0} {
        set c [lindex $todo 0]
        set todo [lrange $todo 1 end]
        if {$c eq "." || $c eq ""} { continue }
        if {$c eq ".."} { set cur [file dirname $cur]; continue }
        # file split marks a leading ~ as ./~ so that it is never tilde-expanded
        if {[string range $c 0 1] eq "./"} { set c [string range $c 2 end] }
        set next [string trimright $cur /]/$c
        if {![catch {file type $next} type] && $type eq "link"} {
            if {[incr hops] > 40} { error "too many levels of symbolic links at $next" }
            set target [file readlink $next]
            set tparts [file split $target]
            if {[file pathtype $target] eq "absolute"} {
                set cur /
                set tparts [lrange $tparts 1 end]
            }
            set todo [concat $tparts $todo]
            continue
        }
        set cur $next
    }
    return $cur
}

# Returns {ok <real path>} or {reject <detail_code> <message>}.
proc ::skillpilot::check_script {script} {
    variable run_dir
    if {$script eq ""} { return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path: empty"] }
    if {[string index $script 0] in {/ ~ \\} || [file pathtype $script] ne "relative"} {
        return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path '$script': absolute paths and ~ are refused"]
    }
    set parts [split $script /]
    if {[lindex $parts 0] ne "scripts" || [llength $parts] < 2} {
        return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path '$script': must start with scripts/"]
    }
    foreach p $parts {
        if {$p eq ".." || $p eq "." || $p eq ""} {
            return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path '$script': '.', '..' and empty components are refused"]
        }
        if {[string index $p 0] eq "~" || [string first "\\" $p] >= 0} {
            return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path '$script': '~' and '\\' are refused"]
        }
    }
    set root [realpath [file join $run_dir scripts]]
    set real [realpath "[string trimright $run_dir /]/$script"]
    if {[string first "$root/" $real] != 0} {
        return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path '$script': resolves to $real, outside $root"]
    }
    if {![file isfile $real]} {
        return [list reject SCRIPT_NOT_FOUND "script '$script' does not exist under scripts/"]
    }
    return [list ok $real]
}

# ── heartbeat and loop ────────────────────────────────────────────────────────────────────────

# The runner is alive while /proc/<pid> exists and is not a zombie (Linux only; elsewhere assumed).
proc ::skillpilot::runner_alive {pid} {
    if {[catch {
        set f [open /proc/$pid/stat r]
        set stat [read $f]
        close $f
    }]} { return 0 }
    set state [lindex [string range $stat [expr {[string last ")" $stat] + 2}] end] 0]
    return [expr {$state ni {Z X}}]
}

proc ::skillpilot::beat {} {
    variable run_dir; variable beats; variable last_beat
    incr beats
    set last_beat [clock milliseconds]
    write_atomic [file join $run_dir session heartbeat] "$beats [now_iso] [pid]\n"
}

# An orphaned session (its runner killed -9) keeps its restored design for orphan_grace_ms, so
# that `timewarp skill resume` can take it over by writing itself into session/runner.json; then
# it ends itself instead of idling forever (grace 0: at once). The runner is session/runner.json
# when readable, else the boot's runner_pid/runner_host (grace 0). Only on the runner's own host
# (under a farm launcher the tool may run elsewhere) and where /proc tells. Called from every
# tick; looks at most once per heartbeat period.
proc ::skillpilot::check_runner {} {
    variable run_dir; variable heartbeat_ms; variable runner_pid; variable runner_host
    variable runner_checked_at; variable orphan_since
    if {![info exists runner_checked_at]} { set runner_checked_at 0; set orphan_since "" }
    set now [clock milliseconds]
    if {$now - $runner_checked_at < $heartbeat_ms} { return }
    set runner_checked_at $now
    if {![file isdirectory /proc/self]} { return }
    set pid $runner_pid
    set host $runner_host
    set grace 0
    if {![catch {
        set f [open [file join $run_dir session runner.json] r]
        set text [read $f]
        close $f
        set r [json::parse $text]
        set r_pid [dict get $r pid]
        set r_host [dict get $r host]
        set r_grace [dict get $r orphan_grace_ms]
    }]} {
        lassign [list $r_pid $r_host $r_grace] pid host grace
    }
    if {$pid eq "" || $host ne [info hostname]} { return }
    set orphan [file join $run_dir session orphan.json]
    if {[runner_alive $pid]} {
        if {$orphan_since ne ""} {
            set orphan_since ""
            catch {file delete $orphan}
            log "runner pid $pid took the session over"
        }
        return
    }
    if {$orphan_since eq ""} {
        set orphan_since $now
        set iso {{ms} {
            return "[clock format [expr {$ms / 1000}] -format {%Y-%m-%dT%H:%M:%S} -gmt 1].[format %03d [expr {$ms % 1000}]]Z"
        }}
        set o "\{\"schema_version\": \"1.0\", \"runner_pid\": $pid, \"since\": \"[apply $iso $now]\","
        append o " \"until\": \"[apply $iso [expr {$now + $grace}]]\", \"orphan_grace_ms\": $grace\}\n"
        catch {write_atomic $orphan $o}
        log "runner pid $pid is gone; the session waits $grace ms for `timewarp skill resume`"
    }
    if {$now - $orphan_since >= $grace} {
        log "runner pid $pid is gone and no resume came within $grace ms; ending the session"
        ::skillpilot::real_exit 0
    }
}

proc ::skillpilot::tick {} {
    variable poll_ms; variable heartbeat_ms; variable last_beat; variable busy
    # Scheduled first, so that a script calling `update` still gets heartbeats; the busy flag
    # keeps that re-entrant tick from claiming another request.
    after $poll_ms ::skillpilot::tick
    if {[catch {
        if {[clock milliseconds] - $last_beat >= $heartbeat_ms} { beat }
        check_runner
        if {!$busy} { scan_queue }
    } err]} {
        log "tick error: $::errorInfo"
    }
}

proc ::skillpilot::scan_queue {} {
    variable run_dir
    set queue [file join $run_dir queue]
    foreach name [lsort [glob -nocomplain -directory $queue -tails -types f *.json]] {
        set id [string range $name 0 end-5]
        set src [file join $queue $name]
        set claimed [file join $queue "$name.claimed"]
        set ack [file join $run_dir ack "$id.json"]
        if {[file exists $claimed] || [file exists "$claimed.done"] || [file exists $ack]} {
            # A second request with an id already seen is never run and never acked again.
            set dup [file join $queue "$name.duplicate-[clock milliseconds]"]
            catch {file rename $src $dup}
            log "duplicate request id $id refused (moved to [file tail $dup])"
            continue
        }
        # Claim before running: a request that cannot be renamed was claimed already.
        if {[catch {file rename $src $claimed}]} { continue }
        if {[catch {process $id $claimed} err]} {
            # never leave the processor busy forever; the runtime's deadline will answer this one
            variable busy 0
            log "processing $id failed: $::errorInfo"
        }
        catch {file rename $claimed "$claimed.done"}
    }
}

# ── one request ───────────────────────────────────────────────────────────────────────────────

proc ::skillpilot::process {id claimed} {
    variable busy; variable run_dir
    set busy 1
    set started [now_iso]
    set t0 [clock milliseconds]
    set job_id ""
    set script ""
    set evidence {}
    set detail ""
    set status FAIL
    set etype INTERNAL_ERROR
    set message ""
    if {[catch {
        set f [open $claimed r]
        fconfigure $f -encoding utf-8
        set text [read $f]
        close $f
    } err]} {
        set detail REQUEST_UNREADABLE
        set message "request $id could not be read: $err"
    } elseif {[catch {::skillpilot::json::parse $text} req] || ![string is list $req] || [llength $req] % 2 != 0} {
        set detail REQUEST_MALFORMED
        set message "malformed request JSON in queue/$id.json: $req"
    } else {
        foreach key {schema_version request_id job_id action script created_at} {
            if {![dict exists $req $key]} {
                set detail REQUEST_MALFORMED
                set message "malformed request queue/$id.json: missing field $key"
                break
            }
        }
        if {$detail eq ""} {
            set job_id [dict get $req job_id]
            set script [dict get $req script]
            if {[dict get $req request_id] ne $id} {
                set detail REQUEST_MALFORMED
                set message "malformed request: request_id '[dict get $req request_id]' does not match file name $id.json"
            } elseif {[dict get $req action] ne "SOURCE_TCL"} {
                set etype CMD_FAIL
                set detail SCRIPT_PATH_REJECTED
                set message "security violation: action '[dict get $req action]' refused (only SOURCE_TCL)"
            } else {
                set verdict [check_script $script]
                if {[lindex $verdict 0] ne "ok"} {
                    set etype CMD_FAIL
                    set detail [lindex $verdict 1]
                    set message [lindex $verdict 2]
                } else {
                    lassign [run_script $id $script [lindex $verdict 1]] status etype detail message evidence
                }
            }
        }
    }
    set finished [now_iso]
    set duration [expr {[clock milliseconds] - $t0}]
    set ack "\{\n"
    append ack "  \"schema_version\": \"1.0\",\n"
    append ack "  \"request_id\": [json::quote $id],\n"
    append ack "  \"job_id\": [json::quote $job_id],\n"
    append ack "  \"status\": \"$status\",\n"
    append ack "  \"error_type\": \"$etype\",\n"
    if {$detail ne ""} { append ack "  \"detail_code\": \"$detail\",\n" }
    append ack "  \"message\": [json::quote $message],\n"
    append ack "  \"script\": [json::quote $script],\n"
    append ack "  \"started_at\": \"$started\",\n"
    append ack "  \"finished_at\": \"$finished\",\n"
    append ack "  \"duration_ms\": $duration,\n"
    set ev {}
    foreach e $evidence { lappend ev [json::quote $e] }
    append ack "  \"evidence_paths\": \[[join $ev {, }]\],\n"
    append ack "  \"by\": \"queue_processor\"\n\}\n"
    publish_ack $id $ack
    set busy 0
}

proc ::skillpilot::run_script {id script real} {
    variable run_dir
    set is_restore [expr {$script eq "scripts/restore_wrapper.tcl"}]
    set fail_type [expr {$is_restore ? "RESTORE_FAIL" : "CMD_FAIL"}]
    set here [pwd]
    cd $run_dir
    log "request $id: source $script"
    set rc [catch {uplevel #0 [list source $real]} result opts]
    # restore_wrapper.tcl cds into the design directory (seed §6.2); every script gets the run
    # directory back so relative paths in the next one mean the same thing.
    catch {cd $run_dir}
    if {$rc == 0 || $rc == 2} {
        return [list PASS OK "" "sourced $script" {}]
    }
    set info [expr {[dict exists $opts -errorinfo] ? [dict get $opts -errorinfo] : $result}]
    set code [expr {[dict exists $opts -errorcode] ? [dict get $opts -errorcode] : "NONE"}]
    set errfile [file join session errors "$id.txt"]
    catch {
        file mkdir [file join $run_dir session errors]
        write_atomic [file join $run_dir $errfile] "$info\n"
    }
    if {[lindex $code 0] eq "SKILLPILOT" && [lindex $code 1] eq "EXIT"} {
        return [list FAIL $fail_type SCRIPT_EXIT "$script called exit [lindex $code 2]; the session stays up (see $errfile)" [list $errfile]]
    }
    set first [lindex [split $result "\n"] 0]
    return [list FAIL $fail_type TCL_ERROR "Tcl error in $script: $first (errorInfo in $errfile)" [list $errfile]]
}

# Exactly one ack per request id: the hard link fails when the ack exists already.
proc ::skillpilot::publish_ack {id content} {
    variable run_dir
    set final [file join $run_dir ack "$id.json"]
    set tmp [temp_for $final]
    if {[catch {write_raw $tmp $content} err]} {
        log "could not write the ack for $id: $err"
        return 0
    }
    set rc [catch {file link -hard $final $tmp} err]
    file delete $tmp
    if {$rc} {
        log "ack for $id exists already; this one was dropped ($err)"
        return 0
    }
    return 1
}

# ── start ─────────────────────────────────────────────────────────────────────────────────────

proc ::skillpilot::main {} {
    variable run_dir; variable reports_dir
    set stubbed [namespace exists ::innovus_stub]
    if {$run_dir eq ""} { error "::skillpilot::run_dir is not set" }
    set run_dir [file normalize $run_dir]
    set reports_dir [file join $run_dir reports]
    foreach d {queue ack session scripts reports} { file mkdir [file join $run_dir $d] }
    cd $run_dir
    # User scripts must not end the session; the processor keeps the real exit for itself.
    if {[info commands ::skillpilot::real_exit] eq ""} {
        rename ::exit ::skillpilot::real_exit
        proc ::exit {{code 0}} {
            return -code error -errorcode [list SKILLPILOT EXIT $code] "exit $code called by a script (trapped)"
        }
    }
    beat
    set ready "\{\"schema_version\": \"1.0\", \"pid\": [pid], \"host\": [json::quote [info hostname]],"
    append ready " \"tcl_version\": \"[info patchlevel]\", \"stubbed\": [expr {$stubbed ? "true" : "false"}],"
    append ready " \"started_at\": \"[now_iso]\"\}\n"
    write_atomic [file join $run_dir session ready.json] $ready
    log "queue processor ready (pid [pid], Tcl [info patchlevel])"
    after 0 ::skillpilot::tick
    vwait ::skillpilot::forever
}
