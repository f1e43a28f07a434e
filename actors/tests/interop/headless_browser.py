"""A browser without a screen, for `mcpd login` in tests: `$BROWSER` runs it with the
authorization URL as its one argument. It plays the person: it follows the redirects with
cookies kept (the test authorization server, oidc-provider, approves login and consent at once)
until the redirect to mcpd's loopback listener, which it requests too, as a browser would.

Prints each hop's status and location to stdout (the test keeps it for failure messages) and
exits 0 once the loopback listener answered, 1 otherwise. Bounded: at most MAX_HOPS requests,
TIMEOUT_S seconds each.
"""

import sys
from urllib.parse import urljoin, urlparse

MAX_HOPS = 12
TIMEOUT_S = 20.0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: headless_browser.py URL", file=sys.stderr)
        return 2
    import httpx2

    target = argv[1]
    with httpx2.Client(follow_redirects=False, timeout=TIMEOUT_S) as browser:
        for _ in range(MAX_HOPS):
            response = browser.get(target)
            location = response.headers.get("location")
            print(f"{response.status_code} {urlparse(target).path} -> {location}", flush=True)
            if urlparse(target).path == "/callback" and urlparse(target).hostname == "127.0.0.1":
                return 0 if response.status_code == 200 else 1
            if response.status_code not in (301, 302, 303, 307, 308) or not location:
                print(f"stopped: {response.text[:300]}", flush=True)
                return 1
            target = urljoin(target, location)
    print(f"no redirect to the loopback listener within {MAX_HOPS} hops", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
