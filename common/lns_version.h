/* lns_version.h -- the version of lns: every program's --version, the depot's STATUS reply,
 * the L-Bone's page and the pkg-config files take it from here. */
#ifndef LNS_VERSION_H
#define LNS_VERSION_H

#define LNS_VERSION "0.1.0"

#endif
