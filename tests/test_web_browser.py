"""The local web page in a real headless browser (Chromium and Selenium):
the page loads, a sentence is translated, the heatmap and the word links
appear, and a screenshot is saved."""

import os
import shutil
import tempfile

import pytest

from tests import tiny_runs
from tests import web_model

pytestmark = pytest.mark.tf_only

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
    "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
    "--window-size=1200,1000",
)


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and DRIVER):
        pytest.skip(
            "needs Debian's chromium and chromium-driver "
            "(apt-get install chromium chromium-driver)"
        )
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="needs selenium (the `test` extra)"
    )
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS + (f"--user-data-dir={profile}",):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_page_translates_and_draws(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with web_model.running_server(tiny_runs.nmt_export()) as url:
        browser.get(url + "/")
        assert "tiny" in browser.title
        box = browser.find_element(By.ID, "text")
        box.send_keys("vendredi 20 octobre 1933")
        browser.find_element(By.ID, "translate").click()
        wait = WebDriverWait(browser, 120, poll_frequency=0.2)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#heatmap rect"))
        rows = browser.find_elements(By.CSS_SELECTOR, "#hypotheses tr.hyp")
        labels = [r.find_element(By.TAG_NAME, "td").text for r in rows]
        assert labels[:3] == ["greedy", "beam", "n-best 1"]
        cells = browser.find_elements(By.CSS_SELECTOR, "#heatmap rect.cell")
        sources = browser.find_elements(By.CSS_SELECTOR, "#heatmap .source-token")
        targets = browser.find_elements(By.CSS_SELECTOR, "#heatmap .target-token")
        assert sources and targets
        assert len(cells) == len(sources) * len(targets)
        assert browser.find_elements(By.CSS_SELECTOR, "#links line.link")
        words = browser.find_elements(By.CSS_SELECTOR, "#links .source-word")
        assert len(words) == 4  # vendredi 20 octobre 1933
        # Another hypothesis redraws the pictures.
        rows[-1].click()
        assert "chosen" in rows[-1].get_attribute("class")
        assert browser.find_elements(By.CSS_SELECTOR, "#heatmap rect.cell")
        rows[0].click()
        shot = os.environ.get("WEB_SCREENSHOT") or str(tmp_path / "page.png")
        assert browser.save_screenshot(shot)
        assert os.path.getsize(shot) > 10_000
        # An empty text shows the server's message, not a broken page.
        box.clear()
        browser.find_element(By.ID, "translate").click()
        wait.until(lambda d: d.find_element(By.ID, "error").text)
        assert "empty" in browser.find_element(By.ID, "error").text
        # ... and clears the previous results under it.
        assert not browser.find_elements(By.CSS_SELECTOR, "#hypotheses tr")
        assert not browser.find_elements(By.CSS_SELECTOR, "#heatmap rect")
        assert not browser.find_elements(By.CSS_SELECTOR, "#links line")
