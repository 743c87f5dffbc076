/* Helper that kernel_lane_selftest runs in the guest, to prove that a file
 * passed with run-in-vm.sh --file arrives with its libraries.
 *   kernel_lane_helper ping        prints "pong"
 *   kernel_lane_helper open PATH   prints "uid=<euid> errno=<errno of open(PATH), 0 if it opened>"
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc == 2 && strcmp(argv[1], "ping") == 0) {
        puts("pong");
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "open") == 0) {
        int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
        int err = fd < 0 ? errno : 0;
        if (fd >= 0) close(fd);
        printf("uid=%u errno=%d\n", (unsigned)geteuid(), err);
        return 0;
    }
    fprintf(stderr, "usage: %s ping | open PATH\n", argv[0]);
    return 2;
}
