/* Proof that the sanitizers of the C tests are live (tests/ffi_c.rs expects these runs to
 * fail): "leak" loses a handle the library allocated, which LeakSanitizer must report
 * although the allocation happened in Rust; "ub" overflows a signed integer, which UBSan
 * must turn into a failure. */
#include "check.h"

#include <limits.h>

__attribute__((noinline)) static void lose_a_handle(void) {
    weft_name_list_t *list = NULL;
    OK(weft_pubsub_regions(&list));
    list = NULL; /* never freed */
    /* Keep the store: the last copy of the pointer must be gone when LeakSanitizer looks. */
    __asm__ volatile("" : : "r"(&list) : "memory");
}

int main(int argc, char **argv) {
    if (argc != 2) FAIL("usage: sanitizers leak|ub");
    if (strcmp(argv[1], "leak") == 0) {
        for (int i = 0; i < 4; i++) lose_a_handle();
    } else if (strcmp(argv[1], "ub") == 0) {
        volatile int big = INT_MAX;
        int sum = big + argc; /* signed overflow */
        printf("%d\n", sum);
    }
    printf("ok sanitizers %s\n", argv[1]);
    return 0;
}
