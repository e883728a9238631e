/*
 * A FUSE passthrough over a backing directory that keeps every write in memory until the file is
 * fsynced (fsync, fdatasync, msync MS_SYNC all arrive as FUSE fsync), as a disk's volatile cache
 * and the page cache together do. SIGUSR1 is the power cut: every write not yet synced is dropped
 * and every later change fails, so after the cut (and a remount) the backing directory holds
 * what a machine that lost power would find. LazyFS is the design it follows. A disk may have
 * written back part of what was not synced before the power went: with POWER_CUT_SEED set, the
 * unmount after a cut writes each unsynced page to the backing file or not, by a coin seeded with
 * it (unsynced size changes are dropped either way).
 *
 * Limits, on purpose: file data and sizes are buffered; metadata (create, unlink, rename, mkdir)
 * reaches the backing directory at once, as on a journaling file system whose journal committed
 * before the cut. After the cut every change fails with EIO: nothing reaches a dead disk. Locks
 * are the kernel's (FUSE keeps POSIX locks local when the file system has none). Built by
 * test/harness/power-cut-fs.ts: cc power-cut-fs.c $(pkg-config --cflags --libs fuse3).
 *
 * Usage: power-cut-fs BACKING_DIR MOUNTPOINT (runs in the foreground; fusermount3 -u to stop).
 */
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define PAGE_BYTES 4096

/* The unsynced state of one backing file (by inode, so renames keep it). */
struct pending {
  ino_t ino;
  int fd;          /* the backing file, for the pages written back at a cut (POWER_CUT_SEED) */
  off_t size;      /* the size readers see */
  off_t truncated; /* backing bytes at or past this read as zeros: a truncate not synced yet */
  char **pages;    /* page number -> written bytes, or NULL */
  size_t page_cap;
  struct pending *next;
};

static const char *backing;
static struct pending *pendings;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t cut;

static void full_path(char out[PATH_MAX], const char *path) {
  snprintf(out, PATH_MAX, "%s%s", backing, path);
}

static struct pending *find(ino_t ino) {
  for (struct pending *p = pendings; p != NULL; p = p->next)
    if (p->ino == ino) return p;
  return NULL;
}

static struct pending *find_or_add(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return NULL;
  struct pending *p = find(st.st_ino);
  if (p != NULL) return p;
  p = calloc(1, sizeof *p);
  p->ino = st.st_ino;
  p->fd = dup(fd);
  p->size = st.st_size;
  p->truncated = st.st_size;
  p->next = pendings;
  pendings = p;
  return p;
}

static void drop(struct pending *p) {
  close(p->fd);
  for (size_t i = 0; i < p->page_cap; i++) free(p->pages[i]);
  free(p->pages);
  struct pending **at = &pendings;
  while (*at != p) at = &(*at)->next;
  *at = p->next;
  free(p);
}

/* The page as readers see it (unsynced bytes over the backing file's), into buf. */
static void read_page(int fd, struct pending *p, size_t pgno, char *buf) {
  if (p != NULL && pgno < p->page_cap && p->pages[pgno] != NULL) {
    memcpy(buf, p->pages[pgno], PAGE_BYTES);
    return;
  }
  memset(buf, 0, PAGE_BYTES);
  off_t start = (off_t)pgno * PAGE_BYTES;
  off_t end = start + PAGE_BYTES;
  if (p != NULL && end > p->truncated) end = p->truncated;
  if (end > start) {
    ssize_t got = pread(fd, buf, (size_t)(end - start), start);
    (void)got;
  }
}

static char *page_for_write(int fd, struct pending *p, size_t pgno) {
  if (pgno >= p->page_cap) {
    size_t cap = p->page_cap == 0 ? 64 : p->page_cap;
    while (cap <= pgno) cap *= 2;
    p->pages = realloc(p->pages, cap * sizeof *p->pages);
    memset(p->pages + p->page_cap, 0, (cap - p->page_cap) * sizeof *p->pages);
    p->page_cap = cap;
  }
  if (p->pages[pgno] == NULL) {
    char *page = malloc(PAGE_BYTES);
    read_page(fd, p, pgno, page);
    p->pages[pgno] = page;
  }
  return p->pages[pgno];
}

static void set_size(int fd, struct pending *p, off_t size) {
  if (size < p->size) {
    if (size < p->truncated) p->truncated = size;
    for (size_t pgno = (size_t)((size + PAGE_BYTES - 1) / PAGE_BYTES); pgno < p->page_cap; pgno++) {
      free(p->pages[pgno]);
      p->pages[pgno] = NULL;
    }
    if (size % PAGE_BYTES != 0) {
      char *page = page_for_write(fd, p, (size_t)(size / PAGE_BYTES));
      memset(page + size % PAGE_BYTES, 0, PAGE_BYTES - size % PAGE_BYTES);
    }
  }
  p->size = size;
}

/* Writes the file's unsynced state to the backing file and fsyncs it. */
static int sync_pending(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -errno;
  struct pending *p = find(st.st_ino);
  if (p != NULL) {
    if (p->truncated < st.st_size && ftruncate(fd, p->truncated) != 0) return -errno;
    for (size_t pgno = 0; pgno < p->page_cap; pgno++) {
      if (p->pages[pgno] == NULL) continue;
      off_t start = (off_t)pgno * PAGE_BYTES;
      off_t len = p->size - start < PAGE_BYTES ? p->size - start : PAGE_BYTES;
      if (len > 0 && pwrite(fd, p->pages[pgno], (size_t)len, start) != len) return -EIO;
    }
    if (ftruncate(fd, p->size) != 0) return -errno;
    drop(p);
  }
  return fsync(fd) == 0 ? 0 : -errno;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  (void)fi;
  char full[PATH_MAX];
  full_path(full, path);
  if (lstat(full, st) != 0) return -errno;
  pthread_mutex_lock(&lock);
  struct pending *p = S_ISREG(st->st_mode) ? find(st->st_ino) : NULL;
  if (p != NULL) {
    st->st_size = p->size;
    st->st_blocks = (p->size + 511) / 512;
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
  (void)off, (void)fi, (void)flags;
  char full[PATH_MAX];
  full_path(full, path);
  DIR *dir = opendir(full);
  if (dir == NULL) return -errno;
  for (struct dirent *e; (e = readdir(dir)) != NULL;) fill(buf, e->d_name, NULL, 0, 0);
  closedir(dir);
  return 0;
}

static int fs_mkdir(const char *path, mode_t mode) {
  if (cut) return -EIO;
  char full[PATH_MAX];
  full_path(full, path);
  return mkdir(full, mode) == 0 ? 0 : -errno;
}

static int fs_rmdir(const char *path) {
  if (cut) return -EIO;
  char full[PATH_MAX];
  full_path(full, path);
  return rmdir(full) == 0 ? 0 : -errno;
}

static int fs_unlink(const char *path) {
  if (cut) return -EIO;
  char full[PATH_MAX];
  full_path(full, path);
  struct stat st;
  int had = lstat(full, &st) == 0;
  if (unlink(full) != 0) return -errno;
  pthread_mutex_lock(&lock);
  struct pending *p = had && st.st_nlink <= 1 ? find(st.st_ino) : NULL;
  if (p != NULL) drop(p);
  pthread_mutex_unlock(&lock);
  return 0;
}

static int fs_rename(const char *from, const char *to, unsigned int flags) {
  if (flags != 0) return -EINVAL;
  if (cut) return -EIO;
  char a[PATH_MAX], b[PATH_MAX];
  full_path(a, from);
  full_path(b, to);
  return rename(a, b) == 0 ? 0 : -errno;
}

static int fs_link(const char *from, const char *to) {
  if (cut) return -EIO;
  char a[PATH_MAX], b[PATH_MAX];
  full_path(a, from);
  full_path(b, to);
  return link(a, b) == 0 ? 0 : -errno;
}

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
  if (cut) return -EIO;
  (void)fi;
  char full[PATH_MAX];
  full_path(full, path);
  return chmod(full, mode) == 0 ? 0 : -errno;
}

static int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
  if (cut) return -EIO;
  (void)fi;
  char full[PATH_MAX];
  full_path(full, path);
  return utimensat(AT_FDCWD, full, tv, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

static int open_backing(const char *path, int flags, mode_t mode, struct fuse_file_info *fi) {
  char full[PATH_MAX];
  full_path(full, path);
  /* O_TRUNC is buffered like any truncate; writes go through this daemon, never O_APPEND. */
  int fd = open(full, (flags & ~(O_TRUNC | O_APPEND | O_WRONLY)) | O_RDWR, mode);
  if (fd < 0 && errno == EACCES) fd = open(full, flags & ~(O_TRUNC | O_APPEND));
  if (fd < 0) return -errno;
  fi->fh = (uint64_t)fd;
  if (flags & O_TRUNC) {
    pthread_mutex_lock(&lock);
    if (!cut) {
      struct pending *p = find_or_add(fd);
      if (p != NULL) set_size(fd, p, 0);
    }
    pthread_mutex_unlock(&lock);
  }
  return 0;
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
  if (cut) return -EIO;
  return open_backing(path, fi->flags | O_CREAT, mode, fi);
}

static int fs_open(const char *path, struct fuse_file_info *fi) {
  if (cut && (fi->flags & O_TRUNC)) return -EIO;
  return open_backing(path, fi->flags, 0, fi);
}

static int fs_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi) {
  (void)path;
  int fd = (int)fi->fh;
  struct stat st;
  if (fstat(fd, &st) != 0) return -errno;
  pthread_mutex_lock(&lock);
  struct pending *p = cut ? NULL : find(st.st_ino);
  off_t file_size = p != NULL ? p->size : st.st_size;
  if (off >= file_size) size = 0;
  else if ((off_t)(off + size) > file_size) size = (size_t)(file_size - off);
  char page[PAGE_BYTES];
  for (size_t done = 0; done < size;) {
    off_t at = off + (off_t)done;
    size_t in_page = (size_t)(at % PAGE_BYTES);
    size_t n = PAGE_BYTES - in_page < size - done ? PAGE_BYTES - in_page : size - done;
    read_page(fd, p, (size_t)(at / PAGE_BYTES), page);
    memcpy(buf + done, page + in_page, n);
    done += n;
  }
  pthread_mutex_unlock(&lock);
  return (int)size;
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi) {
  (void)path;
  int fd = (int)fi->fh;
  if (cut) return -EIO;
  pthread_mutex_lock(&lock);
  {
    struct pending *p = find_or_add(fd);
    if (p == NULL) {
      pthread_mutex_unlock(&lock);
      return -EIO;
    }
    for (size_t done = 0; done < size;) {
      off_t at = off + (off_t)done;
      size_t in_page = (size_t)(at % PAGE_BYTES);
      size_t n = PAGE_BYTES - in_page < size - done ? PAGE_BYTES - in_page : size - done;
      memcpy(page_for_write(fd, p, (size_t)(at / PAGE_BYTES)) + in_page, buf + done, n);
      done += n;
    }
    if (off + (off_t)size > p->size) p->size = off + (off_t)size;
  }
  pthread_mutex_unlock(&lock);
  return (int)size;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
  if (cut) return -EIO;
  char full[PATH_MAX];
  full_path(full, path);
  int fd = fi != NULL ? (int)fi->fh : open(full, O_RDWR);
  if (fd < 0) return -errno;
  pthread_mutex_lock(&lock);
  if (!cut) {
    struct pending *p = find_or_add(fd);
    if (p != NULL) set_size(fd, p, size);
  }
  pthread_mutex_unlock(&lock);
  if (fi == NULL) close(fd);
  return 0;
}

static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
  (void)path, (void)datasync;
  pthread_mutex_lock(&lock);
  int rc = cut ? -EIO : sync_pending((int)fi->fh);
  pthread_mutex_unlock(&lock);
  return rc;
}

static int fs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi) {
  (void)path, (void)datasync, (void)fi;
  return 0;
}

static int fs_release(const char *path, struct fuse_file_info *fi) {
  (void)path;
  close((int)fi->fh);
  return 0;
}

static int fs_statfs(const char *path, struct statvfs *st) {
  char full[PATH_MAX];
  full_path(full, path);
  return statvfs(full, st) == 0 ? 0 : -errno;
}

/* After a cut: each unsynced page reaches the disk, or not, by a seeded coin. */
static void write_back_some(unsigned int seed) {
  srand(seed);
  for (struct pending *p = pendings; p != NULL; p = p->next) {
    for (size_t pgno = 0; pgno < p->page_cap; pgno++) {
      off_t start = (off_t)pgno * PAGE_BYTES;
      if (p->pages[pgno] == NULL || start >= p->size || rand() % 2 == 0) continue;
      off_t len = p->size - start < PAGE_BYTES ? p->size - start : PAGE_BYTES;
      if (pwrite(p->fd, p->pages[pgno], (size_t)len, start) != len) perror("write back");
    }
  }
}

static void on_cut(int sig) {
  (void)sig;
  cut = 1;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
  (void)conn;
  /* Sizes and pages come from this daemon alone, never from a cache it did not fill. */
  cfg->attr_timeout = 0;
  cfg->entry_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->use_ino = 1;
  return NULL;
}

static const struct fuse_operations ops = {
    .init = fs_init,
    .getattr = fs_getattr,
    .readdir = fs_readdir,
    .mkdir = fs_mkdir,
    .rmdir = fs_rmdir,
    .unlink = fs_unlink,
    .rename = fs_rename,
    .link = fs_link,
    .chmod = fs_chmod,
    .utimens = fs_utimens,
    .create = fs_create,
    .open = fs_open,
    .read = fs_read,
    .write = fs_write,
    .truncate = fs_truncate,
    .fsync = fs_fsync,
    .fsyncdir = fs_fsyncdir,
    .release = fs_release,
    .statfs = fs_statfs,
};

int main(int argc, char *argv[]) {
  if (argc != 3) {
    fprintf(stderr, "usage: power-cut-fs BACKING_DIR MOUNTPOINT\n");
    return 2;
  }
  static char resolved[PATH_MAX];
  if (realpath(argv[1], resolved) == NULL) {
    perror(argv[1]);
    return 2;
  }
  backing = resolved;
  struct sigaction sa = {0};
  sa.sa_handler = on_cut;
  sigaction(SIGUSR1, &sa, NULL);
  char *fuse_argv[] = {argv[0], "-f", "-o", "fsname=power-cut-fs", argv[2], NULL};
  int rc = fuse_main(5, fuse_argv, &ops, NULL);
  const char *seed = getenv("POWER_CUT_SEED");
  if (cut && seed != NULL) write_back_some((unsigned int)strtoul(seed, NULL, 10));
  return rc;
}
