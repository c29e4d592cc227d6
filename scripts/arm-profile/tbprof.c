/* tbprof: qemu-user TCG plugin (QEMU 7.2, plugin API v1): guest instructions per translation-block
 * start address; dumps "addr count" lines to the file named by env TBPROF_OUT at exit. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
extern void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr, uint64_t imm);
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
#define CAP (1u << 20)
struct entry { uint64_t addr; uint64_t count; };
static struct entry *table;
static struct entry *lookup(uint64_t a) {
  uint64_t h = (a * 0x9E3779B97F4A7C15ull) >> 44;
  for (;;) {
    struct entry *e = &table[h & (CAP - 1)];
    if (e->addr == a) return e;
    if (e->addr == 0) { e->addr = a; return e; }
    ++h;
  }
}
static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  struct entry *e = lookup(qemu_plugin_tb_vaddr(tb));
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &e->count, qemu_plugin_tb_n_insns(tb));
}
static void on_exit_cb(qemu_plugin_id_t id, void *p) {
  (void)id; (void)p;
  const char *path = getenv("TBPROF_OUT");
  FILE *f = fopen(path ? path : "/tmp/tbprof.out", "w");
  uint64_t total = 0;
  for (size_t i = 0; i < CAP; ++i) if (table[i].count) { fprintf(f, "%" PRIx64 " %" PRIu64 "\n", table[i].addr, table[i].count); total += table[i].count; }
  fclose(f);
  fprintf(stderr, "insn_count: total %" PRIu64 "\n", total);
}
__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  (void)info; (void)argc; (void)argv;
  table = calloc(CAP, sizeof *table);
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
  return 0;
}
