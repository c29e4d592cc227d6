/* tb_profile: a qemu-user TCG plugin that counts guest instructions per translation block, so a
 * per-function breakdown of scripts/arm-cost.sh's totals can be made (tb_profile_diff.py).
 *
 * Build:  cc -O2 -shared -fPIC -o tb_profile.so tb_profile.c
 * Use:    TB_PROFILE_OUT=run.txt qemu-arm -plugin ./tb_profile.so ./fgemma bench --threads 1 ...
 *         writes "start_address instructions" lines (hex, decimal) at exit.
 *
 * The counters are plain inline adds, like ../shared/tools/insn_count.c (whose plugin ABI
 * declarations these follow): exact for one guest thread only (bench --threads 1). Their sum equals
 * insn_count's total for the same run. A block translated twice gets two lines (summed later). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
extern void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                                     uint64_t imm);
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

struct block_count {
  uint64_t start;
  uint64_t instructions;
};
/* One fixed array: the inline adds hold pointers into it, so it is never reallocated. Blocks past
 * its end are not counted (and the output says how many were dropped). */
enum { kMaxBlocks = 1 << 22 };
static struct block_count *blocks;
static size_t used, dropped;

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  if (!blocks) blocks = calloc(kMaxBlocks, sizeof *blocks);
  if (!blocks || used == kMaxBlocks) {
    ++dropped;
    return;
  }
  struct block_count *b = &blocks[used++];
  b->start = qemu_plugin_tb_vaddr(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->instructions, qemu_plugin_tb_n_insns(tb));
}

static void write_counts(qemu_plugin_id_t id, void *userdata) {
  (void)id;
  (void)userdata;
  const char *path = getenv("TB_PROFILE_OUT");
  FILE *f = fopen(path ? path : "tb_profile.txt", "w");
  if (!f) return;
  for (size_t i = 0; i < used; ++i) {
    if (blocks[i].instructions) fprintf(f, "%" PRIx64 " %" PRIu64 "\n", blocks[i].start, blocks[i].instructions);
  }
  if (dropped) fprintf(stderr, "tb_profile: %zu blocks not counted (table full)\n", dropped);
  fclose(f);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                                               char **argv) {
  (void)info;
  (void)argc;
  (void)argv;
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, write_counts, NULL);
  return 0;
}
