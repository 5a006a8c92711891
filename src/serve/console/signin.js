// The sign-in form: keeps the token in the cookie that the server reads
// when the console page is asked for, then asks for it again.
"use strict";

document.getElementById("signin-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = document.getElementById("token").value.trim();
  if (!token) return;
  const secure = location.protocol === "https:" ? "; Secure" : "";
  document.cookie = `trellis_token=${encodeURIComponent(token)}; Path=/; SameSite=Strict${secure}`;
  location.assign("/");
});
