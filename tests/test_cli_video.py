"""eval --video: .mp4 through imageio-ffmpeg's own ffmpeg, or one line naming .gif without it."""
import sys

import numpy as np
import pytest

from ppo_control.config import ConfigError
from ppo_control.evaluate import video_writer, write_video


def frames(n=12, size=32):
    return [np.full((size, size, 3), 20 * i, np.uint8) for i in range(n)]


def test_mp4_is_written_and_reads_back(tmp_path):
    import imageio.v3 as iio
    path = write_video(tmp_path / "sub" / "x.mp4", frames(), fps=30)
    back = iio.imread(path)
    assert back.shape == (12, 32, 32, 3)
    assert abs(int(back[5].mean()) - 100) <= 3  # frame 5 was uniformly 100 (H.264 is lossy by a little)


def test_gif_is_written(tmp_path):
    import imageio.v3 as iio
    assert iio.imread(write_video(tmp_path / "x.gif", frames(4), fps=10)).shape[0] == 4


def test_mp4_without_an_encoder_is_refused_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # import fails as if not installed
    with pytest.raises(ConfigError) as e:
        video_writer("out/x.mp4")
    assert str(e.value) == ("out/x.mp4: writing .mp4 needs imageio-ffmpeg (pip install imageio-ffmpeg); "
                            "or give a .gif path")
    video_writer("out/x.gif")  # a gif needs no encoder
