"""The user's own pip settings, read as pip reads them, on a copied Windows drive."""

from __future__ import annotations

from app.demo.image_builder import ImageBuilder
from app.sources.pip_settings import DEFAULT_INDEX, read_pip_settings
from app.system.offline import OfflineImage

APPDATA_INI = r"C:\Users\alice\AppData\Roaming\pip\pip.ini"
VENV = r"C:\Users\alice\ComfyUI\venv"


def test_no_settings_means_pypi(tmp_path):
    image = ImageBuilder(tmp_path / "img")
    assert read_pip_settings(OfflineImage(image.root)).indexes == [DEFAULT_INDEX]


def test_a_mirror_in_the_users_pip_ini_is_used_and_the_environments_own_file_wins(tmp_path):
    image = ImageBuilder(tmp_path / "img")
    image.write(APPDATA_INI, "[global]\nindex-url = https://pypi.tuna.tsinghua.edu.cn/simple/\n"
                             "extra-index-url = file:///C:/wheels http://insecure.example/simple\n"
                             "cert = C:\\certs\\company.pem\n")
    settings = read_pip_settings(OfflineImage(image.root))
    assert settings.indexes == ["https://pypi.tuna.tsinghua.edu.cn/simple"]  # file:// and http:// never used
    assert settings.cert == r"C:\certs\company.pem" and settings.sources == [APPDATA_INI]
    image.write(VENV + r"\pip.ini", "[install]\nindex-url = https://mirrors.aliyun.com/pypi/simple\n")
    settings = read_pip_settings(OfflineImage(image.root), image.host(VENV))
    assert settings.index_url == "https://mirrors.aliyun.com/pypi/simple"


def test_pip_variables_win_over_every_file(tmp_path):
    image = ImageBuilder(tmp_path / "img")
    image.write(APPDATA_INI, "[global]\nindex-url = https://pypi.tuna.tsinghua.edu.cn/simple\n")
    image.set_variable("user", "PIP_INDEX_URL", "https://pypi.example.org/simple")
    assert read_pip_settings(OfflineImage(image.root)).index_url == "https://pypi.example.org/simple"


def test_pip_config_file_replaces_the_users_files(tmp_path):
    image = ImageBuilder(tmp_path / "img")
    image.write(APPDATA_INI, "[global]\nindex-url = https://pypi.tuna.tsinghua.edu.cn/simple\n")
    image.write(r"C:\cfg\pip.ini", "[global]\nextra-index-url = https://extra.example/simple\n")
    image.set_variable("user", "PIP_CONFIG_FILE", r"C:\cfg\pip.ini")
    settings = read_pip_settings(OfflineImage(image.root))
    assert settings.indexes == [DEFAULT_INDEX, "https://extra.example/simple"]
