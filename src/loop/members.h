/*
 * The daemon's side of a CA-gated network (docs/membership.md, "Running a
 * network"): it reads the node's certificate, the root set and the
 * revocation list from their files, hands them to the engine, and keeps the
 * newest root set and revocation list the engine holds in the state
 * directory, so that a restart never goes back to an older one (a file
 * replaced by an older copy is refused as a rollback). SIGHUP reads the
 * files again without touching sessions.
 */
#ifndef YIP_LOOP_MEMBERS_H
#define YIP_LOOP_MEMBERS_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "peer/peer.h"

/* The node's certificate is warned about this long before it expires. */
#define MEMBERS_WARN_S (7 * 86400ULL)

struct loop_members {
	bool on;
	uint8_t ca[YIP_KEY_LEN];
	char *cert_path, *roots_path, *revocations_path, *state_dir;
	int dirfd;                               /* the state directory, opened at start */
	uint64_t saved_roots, saved_revocations; /* serials in the state directory (0: none) */
	uint64_t records_at;                     /* next look at the records to save */
	uint64_t records_sum;                    /* of the saved records' seqs and count */
};

/* How often the records the node holds are saved, if they changed. */
#define MEMBERS_RECORDS_NS (10ULL * 1000000000ULL)

/*
 * Copies the paths of cfg (nothing to do without ca) and opens the state
 * directory, created with mode 0700 if missing, for a daemon that runs as
 * uid: refused if it is a symbolic link (not followed), not a directory,
 * owned by neither root nor uid, or writable by group or others; handed to
 * uid:gid through its descriptor (when the daemon will change to uid).
 * Every file in it is then opened relative to that descriptor, without
 * following a symbolic link. Returns 0, or -1 with "state_dir DIR: what is
 * wrong" in err.
 */
int loop_members_setup(struct loop_members *m, const struct yip_config *cfg, uid_t uid, gid_t gid,
                       char *err, size_t errlen);

/* Makes dev a member (its certificate) and offers it the saved and the
 * configured root set and revocation list. 0, or -1 with a message in err. */
int loop_members_start(struct loop_members *m, struct yip_device *dev, char *err, size_t errlen);

/* SIGHUP: the files again. Problems are logged; what the engine held stays. */
void loop_members_reload(struct loop_members *m, struct yip_device *dev);

/* Saves the member records the node holds in the state directory, if they
 * changed since the last time; looks every MEMBERS_RECORDS_NS. */
void loop_members_tick(struct loop_members *m, struct yip_device *dev, uint64_t now);

void loop_members_free(struct loop_members *m);

#endif
