"""The web console in a real browser (headless Chromium through chromedriver and Selenium)
against a real `psync serve` with real data: sign in, watch a message uploaded by a WebSocket
client appear live in the partition view, retry a dead letter, revoke a session and see its
client disconnected. Screenshots of each view go to the folder given as the first argument.

Run by scripts/check-console.sh, which builds nothing: it needs `swift build` done."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import websockets.sync.client
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

ROOT = pathlib.Path(__file__).resolve().parents[2]
PSYNC = pathlib.Path(os.environ.get("PSYNC_BINARY", ROOT / ".build" / "debug" / "psync"))
SHOTS = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "console-screenshots").resolve()
PASSWORD = "correct horse battery"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, token=None):
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, None
    except (urllib.error.URLError, ConnectionError):
        return 0, None


def eventually(what, check, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def main():
    SHOTS.mkdir(parents=True, exist_ok=True)
    work = tempfile.mkdtemp(prefix="psync-console-")
    os.chmod(work, 0o755)
    data = os.path.join(work, "pg")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, PSYNC_BCRYPT_COST="4", LOG_LEVEL="error", PSYNC_FAILPOINT="trigger-fails:rchat.unread-counts")
    # The admin key first: the embedded cluster belongs to one process at a time.
    created = subprocess.run([str(PSYNC), "apikey", "create", "--name", "admin", "--data-dir", data],
                             env=env, capture_output=True, text=True, check=True)
    admin_key = next(word for word in created.stdout.split() if word.startswith("psk_"))
    log = open(os.path.join(work, "server.log"), "w")
    server = subprocess.Popen([str(PSYNC), "serve", "--port", str(port), "--data-dir", data], env=env, stdout=log, stderr=log)
    driver = None
    try:
        eventually("the server", lambda: http("GET", f"{base}/ready")[0] == 200, timeout=120)
        _, ann = http("POST", f"{base}/v1/auth/register", {"email": "ann@example.com", "password": PASSWORD})
        _, bob = http("POST", f"{base}/v1/auth/register", {"email": "bob@example.com", "password": PASSWORD})
        conversation = {"id": "c-console", "displayName": "Console", "unreadCount": 0, "members": [
            {"userName": "ann@example.com", "membershipStatus": "Membership active"},
            {"userName": "bob@example.com", "membershipStatus": "User added, but invite pending"}]}
        ws = websockets.sync.client.connect(f"ws://127.0.0.1:{port}/v1/sync",
                                            additional_headers={"Authorization": f"Bearer {ann['accessToken']}"})
        assert json.loads(ws.recv(timeout=30))["type"] == "ready"

        def upload(partition, operations, request_id):
            # Permission may wait for a trigger (a new member's access): refused, it is sent again.
            deadline = time.time() + 30
            for attempt in range(1000):
                ws.send(json.dumps({"type": "upload", "requestId": f"{request_id}-{attempt}", "partition": partition, "operations": operations}))
                while True:
                    message = json.loads(ws.recv(timeout=30))
                    if message.get("requestId") == f"{request_id}-{attempt}":
                        break
                if message["type"] == "ack":
                    return
                assert time.time() < deadline, message
                time.sleep(0.3)

        eventually("ann's User record", lambda: http("GET", f"{base}/v1/partitions/user%3D{ann['userId']}/changes",
                                                     token=ann["accessToken"])[1]["objects"])
        upload(f"user={ann['userId']}", [{"op": "arrayAppend", "collection": "User", "id": ann["userId"],
                                          "path": "conversations", "value": conversation}], "r-conversation")

        options = webdriver.ChromeOptions()
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"]:
            options.add_argument(argument)
        options.binary_location = "/usr/bin/chromium"
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path="/usr/bin/chromedriver"))
        wait = WebDriverWait(driver, 30)
        shot = lambda name: driver.save_screenshot(str(SHOTS / f"{name}.png"))

        # Signed out, nothing but the form; a wrong key is refused.
        driver.get(f"{base}/console")
        wait.until(EC.visibility_of_element_located((By.ID, "api-key"))).send_keys("psk_wrong")
        driver.find_element(By.ID, "sign-in").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "sign-in-error"), "not valid"))
        # Signed out, neither the navigation nor "Sign out" shows.
        assert not driver.find_element(By.ID, "nav").is_displayed(), "the nav shows on the sign-in screen"
        with urllib.request.urlopen(f"{base}/favicon.ico", timeout=30) as icon:
            assert icon.status == 200 and icon.headers["Content-Type"] == "image/svg+xml"
        shot("sign-in")
        field = driver.find_element(By.ID, "api-key")
        field.clear()
        field.send_keys(admin_key)
        driver.find_element(By.ID, "sign-in").click()
        wait.until(EC.visibility_of_element_located((By.ID, "card-sessions")))
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#card-sessions .value").text == "1")
        # The charts have a time axis and name their peak.
        wait.until(lambda d: all(axis.text.strip() for axis in d.find_elements(By.CSS_SELECTOR, ".chart .axis")))
        assert "peak" in driver.find_element(By.CSS_SELECTOR, ".chart").text
        shot("overview")
        # At phone width nothing runs off the side.
        driver.set_window_size(390, 844)
        wait.until(lambda d: d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1"))
        shot("overview-phone")
        driver.set_window_size(1400, 900)

        # A server error shows its code and message (not "undefined: undefined").
        driver.get(f"{base}/console#partition/not-a-partition")
        wait.until(EC.text_to_be_present_in_element((By.ID, "status"), "invalid_partition: "))
        assert "undefined" not in driver.find_element(By.ID, "status").text

        # The conversation's partition, live: a message uploaded over the WebSocket appears.
        driver.get(f"{base}/console#partitions")
        search = wait.until(EC.visibility_of_element_located((By.ID, "partition-search")))
        search.clear()
        search.send_keys("user=")
        driver.find_element(By.ID, "partition-search-button").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "partition-results"), f"user={ann['userId']}"))
        shot("partitions")
        driver.get(f"{base}/console#partition/conversation%3Dc-console")
        wait.until(EC.text_to_be_present_in_element((By.ID, "load-progress"), "loaded"))
        upload("conversation=c-console", [{"op": "put", "collection": "ChatMessage", "id": "m-console",
                                           "body": {"author": "ann@example.com", "text": "hello from the WebSocket", "location": [],
                                                    "timestamp": "2026-11-26T01:00:00.000Z"}}], "r-message")
        row = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "tr[data-key='ChatMessage/m-console']")))
        # The body column starts with what a person reads: the message's text.
        assert row.find_elements(By.TAG_NAME, "td")[3].text.startswith('text: "hello from the WebSocket"'), row.text
        row.click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "object-json"), "hello from the WebSocket"))
        shot("partition")

        # The unread-count trigger failed on that message (the failpoint): its dead letter, retried.
        driver.get(f"{base}/console#triggers")
        retry = wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#dead-letters button.retry")))
        driver.find_element(By.CSS_SELECTOR, "#dead-letters a.event").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "event-json"), "hello from the WebSocket"))
        shot("triggers")
        retry.click()
        wait.until(EC.alert_is_present()).accept()
        wait.until(EC.text_to_be_present_in_element((By.ID, "retry-progress"), "1/1 retried"))
        assert "failed" not in driver.find_element(By.ID, "retry-progress").text
        wait.until(EC.visibility_of_element_located((By.ID, "no-dead-letters")))

        # Ann's sessions revoked from the console: her WebSocket closes with 4001.
        driver.get(f"{base}/console#users")
        search = wait.until(EC.visibility_of_element_located((By.ID, "user-search")))
        search.send_keys("ann")
        driver.find_element(By.ID, "user-search-button").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "user-results"), "on-line"))
        shot("users")
        driver.find_element(By.CSS_SELECTOR, "#user-results button.revoke").click()
        wait.until(EC.alert_is_present()).accept()
        wait.until(EC.text_to_be_present_in_element((By.ID, "status"), "login(s) of ann@example.com ended"))
        try:
            while True:
                ws.recv(timeout=20)
        except websockets.exceptions.ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 4001, closed
        wait.until(EC.text_to_be_present_in_element((By.ID, "user-results"), "off-line"))
        print(f"console: every flow passed; screenshots in {SHOTS}")
    except BaseException:
        if driver:
            driver.save_screenshot(str(SHOTS / "failure.png"))
            print("console: failed at", driver.current_url, "; status:", driver.find_element(By.ID, "status").text)
            for entry in driver.get_log("browser"):
                print("browser:", entry)
        raise
    finally:
        if driver:
            driver.quit()
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        if os.environ.get("CONSOLE_KEEP_LOG"):
            print(open(os.path.join(work, "server.log")).read()[-4000:])


if __name__ == "__main__":
    main()
