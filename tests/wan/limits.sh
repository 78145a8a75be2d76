#!/bin/bash
# limits.sh -- the WAN testbed's limits: the ideal completion time of a scenario under its
# event schedule, with or without the exNode's placement.  Sourced by run_scenario.sh and by
# check_limits.sh (which runs it on hand-checked scenarios without the testbed); needs tb_mbit
# (testbed.sh) and the scenario in N, RATES[], EVENTS[], SIZE (bytes), FRAGS and COPIES.

# The caps (tc tbf) count whole frames: a full TCP segment carries 1448 bytes of data (MSS with
# timestamps) in a 1514-byte Ethernet frame, so no client can move file bytes faster than
# PAYLOAD_EFF of the caps; the payload limits are the ideal times over it.
PAYLOAD_EFF=$(awk 'BEGIN { printf "%.4f", 1448 / 1514 }')

# bytes_of SIZE: a scenario's size (K, M and G: powers of 1024) in bytes.
bytes_of() {
    case $1 in
    *G) echo $(( ${1%G} * 1073741824 )) ;;
    *M) echo $(( ${1%M} * 1048576 )) ;;
    *K) echo $(( ${1%K} * 1024 )) ;;
    *) echo "$1" ;;
    esac
}

# parse_event "WHEN WORDS...": sets when, i (host index), what (kill|crash|rate), val.  The
# words may come in either order: "at 30% kill host3", "at 10s host2 rate 1mbit".
parse_event() {
    local w
    # shellcheck disable=SC2086
    set -- $1
    when=$1; shift; i=""; what=""; val=""
    while [ $# -gt 0 ]; do
        w=$1; shift
        case $w in
        host[0-9]*) i=${w#host} ;;
        kill) what=kill ;;
        crash) what=crash ;;
        rate) what=rate; val=${1:-}; shift || true ;;
        *) echo "run_scenario: event 'at $when ...': unknown word $w" >&2; exit 2 ;;
        esac
    done
    if [ -z "$i" ] || [ -z "$what" ] || [ "$i" -lt 1 ] || [ "$i" -gt "$N" ]; then
        echo "run_scenario: event 'at $when ...': needs hostI (1..$N) and kill, crash or rate R" >&2; exit 2
    fi
}

# ---- the ideal time: a fluid model over the capacity schedule -----------------------------
# ideal_time: seconds (%.3f) until an ideal client has every byte, each host sending at its
# full rate whenever it is alive.  PLACED=1: the client may take each fragment only from the
# hosts holding a copy of it (lors_upload puts copy k of fragment j on host (j*copies + k) mod
# hosts, 0-based); without it, every host holds every byte (one fragment on every host).
#
# Max-flow/min-cut: with c_h(t) the bits host h could have sent by t (the integral of its
# rate), the most a client can have received by t is
#     got(t) = min over sets S of fragments of  demand(F \ S) + sum over h in N(S) of c_h(t)
# (N(S): the hosts holding any fragment of S; equal fragments of size/F).  Fragments with the
# same holders are merged into one class (a cut takes all of a class or none of it), and the
# sets are enumerated once, each reduced to its host mask N(S) with the largest demand it
# covers.  Between events the rates are constant, so every term is linear in t and the time
# got(t) reaches X is exact: the largest, over the masks, of the time that term reaches X.
# The model is event-driven: from t0, each pending event's firing time ("at 10s": its time;
# "at 30%": when got reaches 30% of the file) and the completion time; the earliest wins; an
# event advances every c_h to its time and changes a rate.  Kill and crash set the rate to 0
# for good: a later rate event of a dead host is ignored (run_events does the same).
# Events are taken in the order they fire, whichever their kind, as run_events does.
# limit_spec: the rates and the events as the models read them: "r HOST MBIT;" per host, then
# per event "f PERCENT HOST WHAT MBIT;" or "t SECONDS HOST WHAT MBIT;" (WHAT: kill or rate).
limit_spec() {
    local spec="" e when what val i
    for i in $(seq 1 "$N"); do spec+="r $i $(tb_mbit "${RATES[$((i - 1))]}");"; done
    for e in "${EVENTS[@]}"; do
        parse_event "$e"
        case $when in
        *%) spec+="f ${when%\%} $i" ;;
        *s) spec+="t ${when%s} $i" ;;
        *) spec+="t $when $i" ;;
        esac
        if [ "$what" != rate ]; then spec+=" kill 0;"; else spec+=" rate $(tb_mbit "$val");"; fi
    done
    printf '%s' "$spec"
}

# With FIRES_OUT=FILE, also writes there "K SECONDS" for each event that fires before the end
# (K: its place in EVENTS, from 1), in the order they fire (run_scenario.sh, WAN_EVENT_ON=limit).
ideal_time() {
    local spec
    spec=$(limit_spec)
    awk -v spec="$spec" -v size="$SIZE" -v placed="${PLACED:-0}" -v nf="$FRAGS" \
        -v nc="$COPIES" -v nh="$N" -v fires="${FIRES_OUT:-}" '
    # The time at which every cut term reaches X bits (t0 if they all have; INF if a term
    # that has not has no live host).
    function reach(x,    k, need, tt, worst) {
        worst = t0
        for (k = 1; k <= nm; k++) {
            need = x - (total - mdem[k]) - A[k]
            if (need <= eps) continue
            if (B[k] <= 0) return INF
            tt = t0 + need / B[k]
            if (tt > worst) worst = tt
        }
        return worst
    }
    BEGIN {
        INF = 1e18; total = size * 8; eps = total * 1e-12
        ne = 0; n = split(spec, items, ";")
        for (k = 1; k <= n; k++) {
            if (split(items[k], w, " ") < 3) continue
            if (w[1] == "r") { rate[w[2]] = w[3] * 1e6; continue }
            ne++; kind[ne] = w[1]; at[ne] = w[2]; host[ne] = w[3]; what[ne] = w[4]
            val[ne] = w[5] * 1e6; pending[ne] = 1
        }
        # Placement-free: one fragment that every host holds.
        F = nf; C = nc
        if (!placed || C >= nh) { F = 1; C = nh }
        # Classes of fragments by their holders (host h is bit h-1 of a mask).
        ncl = 0
        for (j = 0; j < F; j++) {
            m = 0
            for (k = 0; k < C; k++) { h = (j * C + k) % nh; if (int(m / 2 ^ h) % 2 == 0) m += 2 ^ h }
            key = sprintf("%.0f", m)               # (mawk prints big integers with %.6g)
            if (!(key in cls)) { cls[key] = ++ncl; cmask[ncl] = m; ccount[ncl] = 0 }
            ccount[cls[key]]++
        }
        if (ncl > 16) {
            print "limits: " ncl " classes of fragments (more than 16): the placement limit is the placement-free one" > "/dev/stderr"
            F = 1; C = nh; ncl = 1; m = 2 ^ nh - 1; cmask[1] = m; ccount[1] = 1
        }
        fbits = total / F
        # Every set of classes (bit c-1: class c), its host mask and its fragments, built from
        # the set without its highest class.
        smask[0] = 0; scount[0] = 0
        for (c = 1; c <= ncl; c++) {
            for (h = 0; h < nh; h++) cbit[c, h] = int(cmask[c] / 2 ^ h) % 2
            lo = 2 ^ (c - 1)
            for (s = lo; s < 2 * lo; s++) {
                m = smask[s - lo]
                for (h = 0; h < nh; h++) if (cbit[c, h] && int(m / 2 ^ h) % 2 == 0) m += 2 ^ h
                smask[s] = m; scount[s] = scount[s - lo] + ccount[c]
                key = sprintf("%.0f", m)
                if (!(key in most) || scount[s] > most[key]) most[key] = scount[s]
            }
        }
        # The distinct masks: their hosts and the largest demand they cover.
        nm = 0
        for (key in most) {
            m = key + 0; nm++; mdem[nm] = most[key] * fbits; mn[nm] = 0
            for (h = 0; h < nh; h++) if (int(m / 2 ^ h) % 2) mh[nm, ++mn[nm]] = h + 1
        }
        for (h = 1; h <= nh; h++) { c_h[h] = 0; if (!(h in rate)) rate[h] = 0 }
        t0 = 0
        while (1) {
            for (k = 1; k <= nm; k++) {
                A[k] = 0; B[k] = 0
                for (q = 1; q <= mn[k]; q++) { h = mh[k, q]; A[k] += c_h[h]; B[k] += rate[h] }
            }
            done_at = reach(total)
            first = 0; te = INF
            for (e = 1; e <= ne; e++) {
                if (!pending[e]) continue
                if (kind[e] == "t") ft = (at[e] > t0) ? at[e] : t0
                else ft = reach(at[e] / 100 * total)
                if (ft < te) { te = ft; first = e }
            }
            if (done_at <= te || !first) break
            for (h = 1; h <= nh; h++) c_h[h] += rate[h] * (te - t0)
            if (fires != "") printf "%d %.6f\n", first, te > fires
            t0 = te; pending[first] = 0; h = host[first]
            if (what[first] == "kill") { rate[h] = 0; dead[h] = 1 }
            else if (!(h in dead)) rate[h] = val[first]
        }
        printf "%.3f\n", (done_at < 1e5) ? done_at : 1e5  # parenthesized: a bare > redirects
    }'
}

# ---- the in-order reference: a fluid model with a bounded reorder buffer -----------------
# inorder_time BUFFER: seconds (%.3f) until an in-order client (a pipe) with a reorder buffer of
# BUFFER bytes has written every byte, under the placement (as PLACED=1 ideal_time).  Bytes
# beyond the written prefix may be held only up to BUFFER (the window [written, written +
# BUFFER)), so a fragment whose holders are slow cannot be fetched ahead of its turn by more
# than the buffer, and the tail of the file may wait for them; ideal_time's placement limit
# lets them start at once.  A fluid simulation in 256 KiB chunks and steps of an eighth of a
# chunk at the aggregate rate: every host sends at its full rate into the window, by one of
# two policies, and the faster of the two is the reference:
#   lowest  every host fills the lowest chunks of its fragments in the window;
#   scarce  every host fills first its fragment whose rest needs the longest at its holders'
#           rates (the order of the placement limit), lowest chunks first.
# A reference, not a bound: a clairvoyant schedule might do better.  Events fire as in
# ideal_time ("at 30%": when the bytes received reach 30%).
inorder_time() {
    local spec
    spec=$(limit_spec)
    awk -v spec="$spec" -v size="$SIZE" -v nf="$FRAGS" -v nc="$COPIES" -v nh="$N" -v buf="$1" '
    function run(policy,    c, j, h, k, i, x, cap, t, W, Wb, lim, got, sum, dt, fired, stop, order, tmp) {
        for (c = 0; c < n; c++) fill[c] = 0
        for (j = 0; j < F; j++) { pf[j] = c0[j]; frem[j] = 0 }
        for (c = 0; c < n; c++) frem[cf[c]] += qlen[c]
        for (h = 1; h <= nh; h++) { rate[h] = rate0[h]; dead[h] = 0 }
        for (e = 1; e <= ne; e++) pending[e] = 1
        sum = 0; for (h = 1; h <= nh; h++) sum += rate[h]
        if (sum <= 0) return INF
        dt = q * 8 / sum / 8
        t = 0; W = 0; got = 0; got0[0] = -1
        while (W < n) {
            for (e = 1; e <= ne; e++) {
                if (!pending[e]) continue
                fired = (kind[e] == "t") ? (t >= at[e]) : (got >= at[e] / 100 * total)
                if (!fired) continue
                pending[e] = 0; h = host[e]
                if (what[e] == "kill") { rate[h] = 0; dead[h] = 1 }
                else if (!dead[h]) rate[h] = val[e]
            }
            # hosts fastest first (a fast host takes the lowest chunk it can)
            for (h = 1; h <= nh; h++) order[h] = h
            for (i = 2; i <= nh; i++)
                for (k = i; k > 1 && rate[order[k]] > rate[order[k - 1]]; k--) {
                    tmp = order[k]; order[k] = order[k - 1]; order[k - 1] = tmp
                }
            if (policy == "scarce")
                for (j = 0; j < F; j++) {
                    sum = 0
                    for (k = 0; k < C; k++) sum += rate[hold[j, k] + 1]
                    need[j] = frem[j] <= 0 ? -1 : sum > 0 ? frem[j] / sum : INF
                }
            Wb = cs[W] + fill[W]            # the written prefix (bits), the head chunk partly
            stop = 1
            for (i = 1; i <= nh; i++) {
                h = order[i]; cap = rate[h] * dt
                if (cap <= 0) continue
                stop = 0
                # the fragments of h in the policy order (insertion sort; a handful)
                nj = nfr[h]
                for (x = 1; x <= nj; x++) mine[x] = fr[h, x]
                if (policy == "scarce")
                    for (x = 2; x <= nj; x++)
                        for (k = x; k > 1 && need[mine[k]] > need[mine[k - 1]]; k--) {
                            tmp = mine[k]; mine[k] = mine[k - 1]; mine[k - 1] = tmp
                        }
                for (k = 1; k <= nj && cap > 0; k++) {
                    j = mine[k]
                    while (cap > 0 && pf[j] < c1[j]) {
                        c = pf[j]; lim = Wb + bb - cs[c]  # the window ends BUFFER past Wb
                        if (lim > qlen[c]) lim = qlen[c]
                        x = lim - fill[c]
                        if (x <= 0) break
                        if (x > cap) x = cap
                        fill[c] += x; cap -= x; got += x; frem[j] -= x
                        if (fill[c] >= qlen[c]) pf[j]++
                    }
                }
            }
            if (stop) return INF
            t += dt
            while (W < n && fill[W] >= qlen[W]) W++
            if (t > 1e5) return INF
            if (got == got0[0]) {
                # nothing moved (the window waits on bytes no live host holds): only a timed
                # event can change that; jump to it, or never
                te = INF
                for (e = 1; e <= ne; e++) if (pending[e] && kind[e] == "t" && at[e] < te) te = at[e]
                if (te == INF) return INF
                if (te > t) t = te
            }
            got0[0] = got
        }
        return t
    }
    BEGIN {
        INF = 1e18; total = size * 8
        ne = 0; m = split(spec, items, ";")
        for (k = 1; k <= m; k++) {
            if (split(items[k], w, " ") < 3) continue
            if (w[1] == "r") { rate0[w[2]] = w[3] * 1e6; continue }
            ne++; kind[ne] = w[1]; at[ne] = w[2]; host[ne] = w[3]; what[ne] = w[4]
            val[ne] = w[5] * 1e6
        }
        for (h = 1; h <= nh; h++) if (!(h in rate0)) rate0[h] = 0
        F = nf; C = nc
        if (C >= nh) { F = 1; C = nh }
        for (j = 0; j < F; j++)
            for (k = 0; k < C; k++) hold[j, k] = (j * C + k) % nh
        # the fragments of each host, lowest first
        for (h = 1; h <= nh; h++) nfr[h] = 0
        for (j = 0; j < F; j++)
            for (k = 0; k < C; k++) { h = hold[j, k] + 1; fr[h, ++nfr[h]] = j }
        # chunks of at most q bytes, none across a fragment boundary; cs: the start of each (bits)
        q = 262144; if (size / 64 < q) q = int(size / 64); if (q < 1) q = 1
        n = 0
        for (j = 0; j < F; j++) {
            lo = int(j * size / F); end = int((j + 1) * size / F); c0[j] = n
            for (; lo < end; lo += q) {
                x = end - lo; if (x > q) x = q
                cs[n] = lo * 8; qlen[n] = x * 8; cf[n] = j; n++
            }
            c1[j] = n
        }
        cs[n] = total; fill[n] = 0
        bb = buf * 8
        a = run("lowest"); b = run("scarce")
        if (b < a) a = b
        printf "%.3f\n", (a < 1e5) ? a : 1e5
    }'
}
