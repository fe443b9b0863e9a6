/* Part of detect_in_hpp.c: whether valgrind's preload library is in this process. */
static int Watched(void)
{
  const char *pre = getenv("LD_PRELOAD");
  return pre && strstr(pre, "vgpreload");
}
