/* Unit tests of the PNG time series plot (ts_png_write_plot), read back with libpng: the image
 * size; each series drawn in its colour where its data points lie (the frame of each panel is
 * found in the image, the axes follow from the documented ranges); NaN gaps and all-NaN series
 * left blank; the legend; a single point and a constant series; a million points decimated per
 * pixel column; the dash pattern of the eleventh series; bad arguments and an unwritable path. */
#include "tessera/io.h"

#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unit/check.h"
#include "unit/test_files.h"

enum {
  WIDTH = 1200,
  HEADER = 34,       /* the title line above the panels (and the time label below them) */
  PANEL_HEIGHT = 400 /* each panel: title, frame, time ticks */
};

/* The first colours of the palette (matplotlib's tab10), and the background. */
static const unsigned char blue[3] = {31, 119, 180}, orange[3] = {255, 127, 14},
                           green[3] = {44, 160, 44}, white[3] = {255, 255, 255};

typedef struct picture {
  unsigned width, height;
  unsigned char *rgb;
} picture;

/* Reads a PNG file as 8-bit RGB with libpng (rgb NULL on failure). */
static picture read_png(const char *path) {
  picture pic = {0, 0, NULL};
  png_image image;
  memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path))
    return pic;
  image.format = PNG_FORMAT_RGB;
  pic.rgb = malloc(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, NULL, pic.rgb, 0, NULL)) {
    free(pic.rgb);
    pic.rgb = NULL;
    return pic;
  }
  pic.width = image.width;
  pic.height = image.height;
  return pic;
}

static int is(const picture *pic, int x, int y, const unsigned char c[3]) {
  if (x < 0 || y < 0 || x >= (int)pic->width || y >= (int)pic->height)
    return 0;
  return memcmp(pic->rgb + 3 * ((size_t)y * pic->width + x), c, 3) == 0;
}

static int is_black(const picture *pic, int x, int y) {
  static const unsigned char black[3] = {0, 0, 0};
  return is(pic, x, y, black);
}

/* Pixels of colour c in columns x0 .. x1 - 1, rows y0 .. y1 - 1. */
static int count(const picture *pic, int x0, int y0, int x1, int y1, const unsigned char c[3]) {
  int found = 0;
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++)
      found += is(pic, x, y, c);
  return found;
}

/* Colour c within `r` pixels of (x, y). */
static int near(const picture *pic, int x, int y, int r, const unsigned char c[3]) {
  return count(pic, x - r, y - r, x + r + 1, y + r + 1, c) > 0;
}

/* The inside of a panel's frame and the axis ranges mapped onto it. */
typedef struct frame {
  int x, y, w, h;
  double t0, t1, v0, v1;
} frame;

/* Finds the frame of panel p: its sides are the only black lines over 100 px long crossing the
 * panel's middle row; its top and bottom are where they end. */
static int find_frame(const picture *pic, int p, frame *f) {
  int mid = HEADER + p * PANEL_HEIGHT + PANEL_HEIGHT / 2, sides[2], nsides = 0;
  for (int x = 0; x < (int)pic->width && nsides < 2; x++) {
    int run = 0;
    while (run <= 100 && is_black(pic, x, mid - 50 + run))
      run++;
    if (run > 100)
      sides[nsides++] = x;
  }
  if (nsides < 2)
    return 0;
  int top = mid, bottom = mid;
  while (is_black(pic, sides[0], top - 1))
    top--;
  while (is_black(pic, sides[0], bottom + 1))
    bottom++;
  f->x = sides[0] + 1;
  f->w = sides[1] - sides[0] - 1;
  f->y = top + 1;
  f->h = bottom - top - 1;
  return 1;
}

static int px(const frame *f, double t) {
  return f->x + (int)lround((t - f->t0) / (f->t1 - f->t0) * (f->w - 1));
}

static int py(const frame *f, double v) {
  return f->y + (int)lround((f->v1 - v) / (f->v1 - f->v0) * (f->h - 1));
}

/* Three gauges, two panels, 101 points at t = 0 .. 100 s. Depth: G1 rises 0 .. 2 m, G2 stays at
 * 1 m, G3 at 0.3 m with a gap at t = 40 .. 60 s; the y axis is 0 .. 2 m + 5% (5 ticks of 0.5
 * inside). Water surface: G1 10 .. 12 m, G2 all NaN, G3 at 10.5 m: 9.9 .. 12.1 m. */
static void test_gauges_plot(void) {
  enum { N = 101 };
  double t[N], h[3][N], z[3][N];
  for (int k = 0; k < N; k++) {
    t[k] = k;
    h[0][k] = 0.02 * k;
    h[1][k] = 1.0;
    h[2][k] = k >= 40 && k <= 60 ? NAN : 0.3;
    z[0][k] = 10.0 + h[0][k];
    z[1][k] = NAN;
    z[2][k] = 10.5;
  }
  ts_plot_series depth[3] = {{"G1", h[0]}, {"G2", h[1]}, {"G3", h[2]}};
  ts_plot_series surface[3] = {{"G1", z[0]}, {"G2", z[1]}, {"G3", z[2]}};
  ts_plot_panel panels[2] = {{"depth", "h (m)", 3, depth}, {"water surface", "z (m)", 3, surface}};
  CHECK(ts_png_write_plot("plot_gauges.png", N, t, "t (s)", 2, panels, "gauges") == TS_OK,
        "gauge plot written: %s", ts_error_message());
  CHECK(temp_files(".", "plot_gauges.png") == 0, "no temporary file left");
  picture pic = read_png("plot_gauges.png");
  CHECK(pic.rgb != NULL, "plot re-read with libpng");
  if (!pic.rgb)
    return;
  CHECK(pic.width == WIDTH && pic.height == 2 * HEADER + 2 * PANEL_HEIGHT,
        "plot size %u x %u (1200 x 868)", pic.width, pic.height);
  CHECK(count(&pic, 0, 0, WIDTH, HEADER, white) < WIDTH * HEADER, "title drawn at the top");
  CHECK(count(&pic, 0, pic.height - HEADER, WIDTH, pic.height, white) < WIDTH * HEADER,
        "time label drawn at the bottom");

  frame f[2] = {{0, 0, 0, 0, 0.0, 100.0, -0.1, 2.1}, {0, 0, 0, 0, 0.0, 100.0, 9.9, 12.1}};
  int found = find_frame(&pic, 0, &f[0]) && find_frame(&pic, 1, &f[1]);
  CHECK(found && f[0].x == f[1].x && f[0].w == f[1].w && f[0].h == f[1].h && f[0].w > 600 &&
            f[0].h > 300,
        "two aligned frames found (%d x %d px at x = %d)", f[0].w, f[0].h, f[0].x);
  if (!found) {
    free(pic.rgb);
    return;
  }
  static const struct {
    int panel, series;
    double t, v;
  } points[] = {{0, 0, 80.0, 1.6},  {0, 1, 10.0, 1.0},  {0, 2, 20.0, 0.3}, {0, 2, 90.0, 0.3},
                {1, 0, 90.0, 11.8}, {1, 2, 10.0, 10.5}, {1, 0, 0.0, 10.0}, {1, 0, 100.0, 12.0}};
  const unsigned char *colours[3] = {blue, orange, green};
  for (size_t k = 0; k < sizeof points / sizeof points[0]; k++) {
    const frame *fp = &f[points[k].panel];
    int x = px(fp, points[k].t), y = py(fp, points[k].v);
    CHECK(near(&pic, x, y, 1, colours[points[k].series]),
          "panel %d: G%d at t = %g s, %g m drawn at (%d, %d)", points[k].panel + 1,
          points[k].series + 1, points[k].t, points[k].v, x, y);
  }
  for (int p = 0; p < 2; p++) {
    int frame_black = 0, left = f[p].x - 1, right = f[p].x + f[p].w;
    int top = f[p].y - 1, bottom = f[p].y + f[p].h;
    for (int x = left; x <= right; x++)
      frame_black += is_black(&pic, x, top) + is_black(&pic, x, bottom);
    for (int y = top + 1; y < bottom; y++)
      frame_black += is_black(&pic, left, y) + is_black(&pic, right, y);
    CHECK(frame_black == 2 * (f[p].w + 2) + 2 * f[p].h, "panel %d: frame drawn all round", p + 1);
  }
  int gap = 0;
  for (int k = 45; k <= 55; k++)
    gap += count(&pic, px(&f[0], k) - 2, py(&f[0], 0.3) - 3, px(&f[0], k) + 3, py(&f[0], 0.3) + 4,
                 white) == 5 * 7;
  CHECK(gap == 11, "G3's NaN gap (t = 40 .. 60 s) left blank at t = 45 .. 55 s (%d of 11)", gap);
  CHECK(count(&pic, f[1].x, f[1].y, f[1].x + f[1].w, f[1].y + f[1].h, orange) == 0,
        "all-NaN G2 not drawn in the water surface panel");

  for (int p = 0; p < 2; p++) {
    int x0 = f[p].x + f[p].w + 1, y0 = f[p].y;
    int entries = 0;
    for (int s = 0; s < 3; s++)
      entries += count(&pic, x0, y0, WIDTH, y0 + 60, colours[s]) > 20;
    int text = 0;
    for (int y = y0; y < y0 + 60; y++)
      for (int x = x0; x < WIDTH; x++)
        text += is_black(&pic, x, y);
    CHECK(entries == 3 && text > 60, "panel %d legend: 3 line samples, labels (%d black pixels)",
          p + 1, text);
  }
  free(pic.rgb);
}

/* A single point and a constant series still get an axis range around their value. */
static void test_degenerate(void) {
  double t1 = 5.0, v1 = 2.0;
  ts_plot_series one = {"P", &v1};
  ts_plot_panel panel = {"one point", "v", 1, &one};
  CHECK(ts_png_write_plot("plot_one.png", 1, &t1, "t (s)", 1, &panel, NULL) == TS_OK,
        "plot of a single point written: %s", ts_error_message());
  picture pic = read_png("plot_one.png");
  frame f;
  int found = pic.rgb && find_frame(&pic, 0, &f);
  int marker = found ? count(&pic, f.x + f.w / 2 - 5, f.y + f.h / 2 - 5, f.x + f.w / 2 + 6,
                             f.y + f.h / 2 + 6, blue)
                     : 0;
  CHECK(found && pic.height == 2 * HEADER + PANEL_HEIGHT && marker >= 30,
        "single point marked by a square at the middle of the frame (%d px)", marker);
  free(pic.rgb);

  enum { N = 50 };
  double t[N], v[N], last[N];
  for (int k = 0; k < N; k++) {
    t[k] = k / 2; /* equal times in pairs */
    v[k] = 3.0;
    last[k] = k == N - 1 ? 3.0 : NAN; /* a marker on the right side of the frame */
  }
  ts_plot_series flat[2] = {{"flat", v}, {"last", last}};
  panel.nseries = 2;
  panel.series = flat;
  CHECK(ts_png_write_plot("plot_flat.png", N, t, "t (s)", 1, &panel, "flat") == TS_OK,
        "plot of a constant series at equal time pairs written: %s", ts_error_message());
  pic = read_png("plot_flat.png");
  found = pic.rgb && find_frame(&pic, 0, &f);
  CHECK(found && count(&pic, f.x + f.w / 2, f.y + f.h / 3, f.x + f.w / 2 + 1, f.y + 2 * f.h / 3,
                       blue) > 0,
        "constant series drawn in the middle third of the frame");
  int inside = found ? count(&pic, f.x + f.w - 4, f.y, f.x + f.w, f.y + f.h, orange) : 0;
  int outside = found ? count(&pic, f.x + f.w, f.y, f.x + f.w + 10, f.y + f.h, orange) : 0;
  CHECK(inside > 0 && outside == 0, "marker at the last time clipped to the frame (%d px inside)",
        inside);
  free(pic.rgb);
}

/* A million points at 0 with spikes to 1 every 1000 points: every pixel column (about 1060
 * points) holds a spike between points at 0, and is drawn as one stroke from 0 to 1. The eleventh
 * series takes the first colour again, dashed. */
static void test_many_points(void) {
  enum { N = 1000000 };
  double *t = malloc(N * sizeof *t), *v = malloc(N * sizeof *v), *low = malloc(N * sizeof *low);
  for (int k = 0; k < N; k++) {
    t[k] = k;
    v[k] = k % 1000 == 500;
    low[k] = -1.0;
  }
  ts_plot_series series[11];
  for (int s = 0; s < 11; s++)
    series[s] = (ts_plot_series){"s", s == 0 ? v : low};
  ts_plot_panel panel = {"spikes", "v", 11, series};
  clock_t start = clock();
  ts_status status = ts_png_write_plot("plot_many.png", N, t, "t (s)", 1, &panel, NULL);
  double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
  CHECK(status == TS_OK, "plot of 11 x 1e6 points written in %.3f s: %s", seconds,
        ts_error_message());
  picture pic = read_png("plot_many.png");
  frame f = {0, 0, 0, 0, 0.0, N - 1.0, -1.1, 1.1};
  int found = pic.rgb && find_frame(&pic, 0, &f);
  int filled = 0, dashed = 0;
  for (int x = f.x; found && x < f.x + f.w; x++) {
    filled += is(&pic, x, py(&f, 0.5), blue) && is(&pic, x, py(&f, 0.05), blue) &&
              is(&pic, x, py(&f, 0.95), blue);
    dashed += near(&pic, x, py(&f, -1.0), 1, blue);
  }
  CHECK(found && filled >= f.w - 2, "spikes drawn from 0 to 1 in every column (%d of %d)", filled,
        f.w);
  CHECK(found && dashed > f.w / 2 && dashed < f.w * 9 / 10,
        "eleventh series in the first colour, dashed (%d of %d columns)", dashed, f.w);
  free(pic.rgb);
  free(t);
  free(v);
  free(low);
}

static void test_bad_arguments(void) {
  double t[3] = {0.0, 1.0, 2.0}, v[3] = {1.0, 2.0, 3.0};
  ts_plot_series series = {"G1", v};
  ts_plot_panel panel = {"depth", "h (m)", 1, &series};
  CHECK(ts_png_write_plot("plot_bad.png", 0, t, "t", 1, &panel, NULL) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "plot_bad.png: a plot of 0 points"),
        "no points rejected: %s", ts_error_message());
  CHECK(ts_png_write_plot("plot_bad.png", 3, t, "t", 0, &panel, NULL) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "plot_bad.png: a plot of 0 panels"),
        "no panels rejected: %s", ts_error_message());
  ts_plot_panel negative = {"depth", "h (m)", -1, &series};
  CHECK(ts_png_write_plot("plot_bad.png", 3, t, "t", 1, &negative, NULL) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "panel 1 has -1 series"),
        "negative series count rejected: %s", ts_error_message());
  double backwards[3] = {0.0, 2.0, 1.0}, nan_time[3] = {0.0, NAN, 2.0};
  CHECK(ts_png_write_plot("plot_bad.png", 3, backwards, "t", 1, &panel, NULL) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "time 2 (1) is before time 1 (2)"),
        "decreasing time rejected: %s", ts_error_message());
  CHECK(ts_png_write_plot("plot_bad.png", 3, nan_time, "t", 1, &panel, NULL) == TS_ERR_INPUT &&
            strstr(ts_error_message(), "time 1 is nan"),
        "NaN time rejected: %s", ts_error_message());
  CHECK(!file_exists("plot_bad.png"), "no file written for rejected plots");
  CHECK(ts_png_write_plot("no_such_dir/plot.png", 3, t, "t", 1, &panel, NULL) == TS_ERR_IO &&
            strstr(ts_error_message(), "no_such_dir/plot.png: cannot write"),
        "plot into a missing directory: %s", ts_error_message());
  CHECK(!file_exists("no_such_dir/plot.png") && temp_files("no_such_dir", "plot.png") == 0,
        "no file left by the failed write");
}

int main(void) {
  test_gauges_plot();
  test_degenerate();
  test_many_points();
  test_bad_arguments();
  printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
