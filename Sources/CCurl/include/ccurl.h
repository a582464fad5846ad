int ccurl_placeholder(void);
