# accre_conf.sh -- sourced by the scripts that start a real ACCRE 1.4 ibp_server (interop.sh,
# client_on_old_depots.sh, tests/bench/bench_ibp_perf.sh): its configuration, as
# ../shared/anchors/accre.md gives it.
#
# accre_conf DIR HOST PORT MKFS_RESOURCE: an 8 GiB "dir" resource (RID 1) made by
# mkfs_resource under DIR (its messages in DIR/mkfs.log), and DIR/ibp.cfg serving it on
# HOST:PORT with 16 threads, the password "ibp" and open access.  0, or 1 when mkfs_resource
# failed.  Start it with: (cd DIR && exec ibp_server DIR/ibp.cfg).
accre_conf() {
    local dir=$1 host=$2 port=$3 mkfs=$4
    mkdir -p "$dir/data1" "$dir/log" "$dir/dbenv"
    "$mkfs" 1 dir "$dir/data1" "$dir/db1" 8192 >"$dir/res1.cfg" 2>"$dir/mkfs.log" || return 1
    sed -i 's/^minfree_size = .*/minfree_size = 100/' "$dir/res1.cfg"
    cat >"$dir/ibp.cfg" <<CFG
[server]
interfaces = $host:$port
port = $port
threads = 16
password = ibp
log_file = $dir/log/ibp.log
log_level = 0
activity_file = $dir/log/ibp_activity.log
rid_log = $dir/log/rid.log
db_env_loc = $dir/dbenv
db_mem = 64

[access_control]
default = open

CFG
    cat "$dir/res1.cfg" >>"$dir/ibp.cfg"
}
