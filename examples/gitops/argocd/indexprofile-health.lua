-- Argo CD health of a trellis.dev IndexProfile.
local hs = {status = "Progressing", message = "waiting for the Trellis operator"}
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Paused" and c.status == "True" then
    return {status = "Suspended", message = c.message}
  end
end
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Valid" then
    if c.status == "True" then
      return {status = "Healthy", message = c.message}
    end
    return {status = "Degraded", message = c.message}
  end
end
return hs
